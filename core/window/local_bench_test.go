package window

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"streamd/core"
)

// localFixture is a window's local step (count, sum, min, max of an int
// field) and 16 batches of 512 records: half key "hot", half 200 others,
// event times over two 1-second panes.
func localFixture(tb testing.TB) (core.Operator, []*core.Batch) {
	in := core.MustSchema(core.Field{Name: "key", Type: core.String}, core.Field{Name: "value", Type: core.Int64})
	def, err := New(Spec{Name: "w", Key: []string{"key"}, Size: 1e9, Local: LocalOn,
		Aggs: []Agg{{Name: "n", Func: Count}, {Name: "s", Func: Sum, Field: "value"}, {Name: "lo", Func: Min, Field: "value"}, {Name: "hi", Func: Max, Field: "value"}}}, in)
	if err != nil {
		tb.Fatal(err)
	}
	op, err := def.Local.New(core.Env{})
	if err != nil {
		tb.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	names := make([]string, 200)
	for i := range names {
		names[i] = fmt.Sprintf("k%03d", i)
	}
	batches := make([]*core.Batch, 16)
	for j := range batches {
		b := core.NewBatch(in)
		for i := 0; !b.Full(); i++ {
			k := "hot"
			if rnd.IntN(2) == 0 {
				k = names[rnd.IntN(len(names))]
			}
			row := b.Append(0, 0, int64(j*512+i)*4e6, int64(i+1))
			row[0], row[1] = core.StringValue(k), core.IntValue(int64(rnd.IntN(1000)))
		}
		batches[j] = b
	}
	return op, batches
}

// The local fold allocates nothing per record once its table is sized.
func TestLocalFoldAllocs(t *testing.T) {
	op, batches := localFixture(t)
	rows := 0
	out := core.NewEmitter(nil, func(x *core.Batch) error { rows = x.Len; x.Release(); return nil }, nil)
	for _, b := range batches { // warm: table, pools
		if err := op.Process(b, out); err != nil {
			t.Fatal(err)
		}
	}
	if rows == 0 || rows >= 512*3/4 {
		t.Fatalf("a batch of 512 folded to %d records", rows)
	}
	if raceOn {
		return
	}
	n := 0
	if a := testing.AllocsPerRun(100, func() {
		op.Process(batches[n%len(batches)], out)
		n++
	}); a != 0 {
		t.Errorf("%v allocations per batch, want 0", a)
	}
}

// BenchmarkLocalFold is the local step's per-record cost: hash, table
// probe, accumulator update, and the partial's copy (ns/record).
func BenchmarkLocalFold(b *testing.B) {
	op, batches := localFixture(b)
	out := core.NewEmitter(nil, func(x *core.Batch) error { x.Release(); return nil }, nil)
	b.ReportAllocs()
	b.ResetTimer()
	for n := range b.N {
		if err := op.Process(batches[n%len(batches)], out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*core.BatchSize), "ns/record")
}
