package window

import (
	"fmt"
	"runtime"
	"testing"

	"streamd/core"
)

// BenchmarkSnapshotGroups serialises a window instance's whole state
// (keys × one pane × count, sum, max over 128 key groups), the work each
// checkpoint does per channel, with and without group prefetching (warm);
// ns/key is the pass divided by the key count.
func BenchmarkSnapshotGroups(b *testing.B) {
	for _, keys := range []int{10_000, 250_000} {
		op, groups := snapshotFixture(b, keys)
		for _, prefetch := range []bool{false, true} {
			b.Run(fmt.Sprintf("keys=%d/prefetch=%v", keys, prefetch), func(b *testing.B) {
				noWarm = !prefetch
				defer func() { noWarm = false }()
				var buf []byte
				runtime.GC() // the fixture's garbage: not the snapshot's cost
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					var err error
					buf, err = op.(core.Snapshotter).SnapshotGroups(buf[:0], groups)
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(keys), "ns/key")
				b.ReportMetric(float64(len(buf))/float64(keys), "bytes/key")
			})
		}
	}
}

// BenchmarkCopyOnWriteSnapshot measures a whole copy-on-write snapshot
// (BeginSnapshot, then Bytes) of the same state, with no writes in
// between: the background goroutine's cost per key.
func BenchmarkCopyOnWriteSnapshot(b *testing.B) {
	const keys = 250_000
	op, groups := snapshotFixture(b, keys)
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for range b.N {
		n = len(op.(core.AsyncSnapshotter).BeginSnapshot(groups).Bytes())
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(keys), "ns/key")
	b.ReportMetric(float64(n)/float64(keys), "bytes/key")
}

func snapshotFixture(b *testing.B, keys int) (core.Operator, []int) {
	schema := core.MustSchema(core.Field{Name: "key", Type: core.String}, core.Field{Name: "value", Type: core.Int64})
	def, err := New(Spec{Name: "w", Key: []string{"key"}, Size: 60e9, Slide: 60e9, Groups: 128,
		Aggs: []Agg{{Name: "n", Func: Count}, {Name: "total", Func: Sum, Field: "value"}, {Name: "top", Func: Max, Field: "value"}}}, schema)
	if err != nil {
		b.Fatal(err)
	}
	errs, _ := core.NewErrorPolicy(core.Fail, "")
	op, err := def.New(core.Env{Channel: 0, Channels: 1, Errors: errs, Watermark: core.NoTime})
	if err != nil {
		b.Fatal(err)
	}
	out := core.NewEmitter(def.Out, func(x *core.Batch) error { x.Release(); return nil }, nil)
	for i := 0; i < keys; {
		in := core.NewBatch(schema)
		for ; i < keys && !in.Full(); i++ {
			k := fmt.Sprintf("k%07d", i)
			h := core.HashKey([]core.Value{core.StringValue(k)}, []int{0}, []core.Type{core.String})
			row := in.Append(uint64(i+1), h, int64(i)*1000, int64(i+1))
			row[0], row[1] = core.StringValue(k), core.IntValue(int64(i%1000))
		}
		if err := op.Process(in, out); err != nil {
			b.Fatal(err)
		}
		in.Release()
	}
	groups := make([]int, 128)
	for g := range groups {
		groups[g] = g
	}
	return op, groups
}
