package runtime

import (
	"fmt"
	"testing"

	"streamd/core"
	"streamd/core/window"
	"streamd/kvstate"
)

// BenchmarkChannelLoadCount is the channel's per-batch path with and
// without the rebalancer's load counting (paired: counting=off is the
// baseline): a batch of 512 records of 200 keys through a window
// aggregate, then, when on, groupLoad.count and serve (the request check)
// as the channel does them. The difference is the cost of counting;
// allocations must stay 0 per op.
func BenchmarkChannelLoadCount(b *testing.B) {
	schema := core.MustSchema(core.Field{Name: "k", Type: core.String}, core.Field{Name: "v", Type: core.Int64}, core.Field{Name: "ts", Type: core.Timestamp})
	def, err := window.New(window.Spec{Name: "w", Key: []string{"k"}, Size: 3600e9, Aggs: []window.Agg{
		{Name: "n", Func: window.Count}, {Name: "s", Func: window.Sum, Field: "v"}}}, schema)
	if err != nil {
		b.Fatal(err)
	}
	in := core.NewBatch(schema)
	in.Grow(core.BatchSize)
	for i := range core.BatchSize {
		row := in.Row(i)
		row[0], row[1], row[2] = core.StringValue(fmt.Sprintf("key%03d", i%200)), core.IntValue(int64(i)), core.TimeValue(int64(i)*1e6)
		in.Hash[i] = core.HashKey(row, []int{0}, []core.Type{core.String})
		in.Time[i] = int64(i) * 1e6
	}
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("counting=%v", on), func(b *testing.B) {
			errs, _ := core.NewErrorPolicy(core.Fail, "")
			op, _ := def.New(core.Env{Channels: 1, Errors: errs})
			insts := []instance{{def: def, op: op}}
			out := core.NewEmitter(def.Out, func(x *core.Batch) error { x.Release(); return nil }, nil)
			gl := newGroupLoad(kvstate.DefaultGroups, kvstate.NewTable(kvstate.DefaultGroups, 1), 0)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if on {
					gl.count(in)
				}
				if err := op.Process(in, out); err != nil {
					b.Fatal(err)
				}
				if on {
					gl.serve(insts)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*in.Len), "ns/record")
		})
	}
}
