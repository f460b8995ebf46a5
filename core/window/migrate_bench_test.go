package window

import (
	"fmt"
	"runtime"
	"testing"

	"streamd/core"
)

// BenchmarkMigrateGroups hands half of 4096 key groups from one window
// instance to another and back (ReleaseGroups, AdoptGroups: what channels
// do at a reconfiguration marker), over 10,000 and 1,000,000 keys. The
// cost must not grow with the keys: the state stays in the shared map and
// only the groups' firing indexes move, by pointer.
func BenchmarkMigrateGroups(b *testing.B) {
	const groups = 4096
	for _, keys := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			def, a := windowFixture(b, groups, 2, core.Env{Channel: 0, Channels: 1})
			o := windowInstance(b, def, core.Env{Channel: 1, Channels: 2, Rescaled: true})
			fillKeys(b, def, a, keys, false)
			half := make([]int, 0, groups/2)
			for g := 1; g < groups; g += 2 {
				half = append(half, g)
			}
			ma, mo := a.(core.Migrator), o.(core.Migrator)
			runtime.GC() // the fixture's garbage: not the migration's cost
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				mo.AdoptGroups(half, ma.ReleaseGroups(half))
				ma.AdoptGroups(half, mo.ReleaseGroups(half))
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(2*b.N), "µs/move")
		})
	}
}
