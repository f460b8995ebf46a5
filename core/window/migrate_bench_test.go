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
			schema := core.MustSchema(core.Field{Name: "key", Type: core.Int64}, core.Field{Name: "value", Type: core.Int64})
			def, err := New(Spec{Name: "w", Key: []string{"key"}, Size: 60e9, Slide: 60e9, Groups: groups,
				Aggs: []Agg{{Name: "n", Func: Count}, {Name: "total", Func: Sum, Field: "value"}}}, schema)
			if err != nil {
				b.Fatal(err)
			}
			errs, _ := core.NewErrorPolicy(core.Fail, "")
			a, err := def.New(core.Env{Channel: 0, Channels: 1, Errors: errs, Watermark: core.NoTime})
			if err != nil {
				b.Fatal(err)
			}
			o, err := def.New(core.Env{Channel: 1, Channels: 2, Errors: errs, Watermark: core.NoTime, Rescaled: true})
			if err != nil {
				b.Fatal(err)
			}
			out := core.NewEmitter(def.Out, func(x *core.Batch) error { x.Release(); return nil }, nil)
			for i := 0; i < keys; {
				in := core.NewBatch(schema)
				for ; i < keys && !in.Full(); i++ {
					h := core.HashKey([]core.Value{core.IntValue(int64(i))}, []int{0}, []core.Type{core.Int64})
					row := in.Append(uint64(i+1), h, int64(i), int64(i+1))
					row[0], row[1] = core.IntValue(int64(i)), core.IntValue(1)
				}
				if err := a.Process(in, out); err != nil {
					b.Fatal(err)
				}
				in.Release()
			}
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
