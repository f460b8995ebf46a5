package window

import (
	"fmt"
	"testing"

	"streamd/core"
)

// BenchmarkProcessNullable is the window's per-record path over a
// nullable key and nullable values: 1,000 string keys and the null key,
// a quarter of the values null, count, count(v), sum, min, max and avg
// (the opOther path that checks for null). It allocates nothing per
// record once every key has state.
func BenchmarkProcessNullable(b *testing.B) {
	def, err := New(Spec{Name: "w", Key: []string{"k"}, Size: 3600e9, Slide: 3600e9, Groups: 64, Aggs: []Agg{
		{Name: "n", Func: Count}, {Name: "nv", Func: Count, Field: "v"}, {Name: "s", Func: Sum, Field: "v"},
		{Name: "lo", Func: Min, Field: "v"}, {Name: "hi", Func: Max, Field: "v"}, {Name: "a", Func: Avg, Field: "f"},
	}}, nullSchema)
	if err != nil {
		b.Fatal(err)
	}
	errs, _ := core.NewErrorPolicy(core.Fail, "")
	op, err := def.New(core.Env{Channel: 0, Channels: 1, Errors: errs, Watermark: core.NoTime})
	if err != nil {
		b.Fatal(err)
	}
	batches := make([]*core.Batch, 16)
	for j := range batches {
		in := core.NewBatch(nullSchema)
		for i := 0; !in.Full(); i++ {
			x := j*core.BatchSize + i
			k := core.Null()
			if x%1001 != 0 {
				k = core.StringValue(fmt.Sprintf("k%04d", x%1000))
			}
			v, f := core.IntValue(int64(x%100)), core.FloatValue(float64(x%7))
			if x%4 == 0 {
				v = core.Null()
			}
			if x%5 == 0 {
				f = core.Null()
			}
			row := []core.Value{k, v, f}
			h := core.HashKey(row, []int{0}, []core.Type{core.String})
			copy(in.Append(uint64(x+1), h, int64(x), int64(x+1)), row)
		}
		batches[j] = in
	}
	out := core.NewEmitter(nil, func(x *core.Batch) error { x.Release(); return nil }, nil)
	for _, in := range batches { // every key gets its state
		if err := op.Process(in, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for n := range b.N {
		if err := op.Process(batches[n%len(batches)], out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*core.BatchSize), "ns/record")
}
