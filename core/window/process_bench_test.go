package window

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"streamd/core"
)

// BenchmarkProcessLargeState is the window's per-record path with state
// far larger than the caches: 1,000,000 keys (string keys, one pane of a
// 1-hour window each, count/sum/max) already present, records for random
// keys. Each record costs the trips to memory of finding and updating its
// key's state, which is what the state's layout decides.
func BenchmarkProcessLargeState(b *testing.B) {
	const keys = 1_000_000
	op, _ := snapshotFixture(b, keys)
	schema := core.MustSchema(core.Field{Name: "key", Type: core.String}, core.Field{Name: "value", Type: core.Int64})
	rnd := rand.New(rand.NewPCG(1, 2))
	names := make([]string, keys)
	for i := range names {
		names[i] = fmt.Sprintf("k%07d", i)
	}
	batches := make([]*core.Batch, 64)
	for j := range batches {
		in := core.NewBatch(schema)
		for !in.Full() {
			i := rnd.IntN(keys)
			k := names[i]
			h := core.HashKey([]core.Value{core.StringValue(k)}, []int{0}, []core.Type{core.String})
			row := in.Append(uint64(i+1), h, int64(i)*1000, int64(i+1))
			row[0], row[1] = core.StringValue(k), core.IntValue(int64(i%1000))
		}
		batches[j] = in
	}
	out := core.NewEmitter(nil, func(x *core.Batch) error { x.Release(); return nil }, nil)
	runtime.GC() // the fixture's garbage: not the records' cost
	b.ReportAllocs()
	b.ResetTimer()
	for n := range b.N {
		if err := op.Process(batches[n%len(batches)], out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*core.BatchSize), "ns/record")
}

// BenchmarkFireLargeState fires one window over 250,000 string keys (the
// rows come out sorted by key): the cost of a watermark passing a window
// end with a large state, per key.
func BenchmarkFireLargeState(b *testing.B) {
	const keys = 250_000
	b.ReportAllocs()
	for range b.N {
		b.StopTimer()
		def, op := windowFixture(b, 128, 3, core.Env{Channel: 0, Channels: 1})
		fillKeys(b, def, op, keys, true)
		n := 0
		out := core.NewEmitter(def.Out, func(x *core.Batch) error { n += x.Len; x.Release(); return nil }, nil)
		runtime.GC()
		b.StartTimer()
		if err := op.Finish(1, out); err != nil {
			b.Fatal(err)
		}
		out.Flush()
		if n != keys {
			b.Fatalf("%d rows fired, want %d", n, keys)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*keys), "ns/key")
}

// BenchmarkProcessRunning is a running aggregate's per-record path (sum
// and avg of an int64 field, kept in 128 bits and checked for overflow per
// output row) over 1,000 keys: no allocation per record.
func BenchmarkProcessRunning(b *testing.B) {
	def, err := NewRunning(RunningSpec{Name: "r", Key: []string{"k"}, Groups: 64,
		Aggs: []Agg{{Name: "n", Func: Count}, {Name: "s", Func: Sum, Field: "v"}, {Name: "m", Func: Avg, Field: "v"}}}, scriptSchema)
	if err != nil {
		b.Fatal(err)
	}
	errs, _ := core.NewErrorPolicy(core.Fail, "")
	op, _ := def.New(core.Env{Channels: 1, Errors: errs})
	rnd := rand.New(rand.NewPCG(1, 2))
	in := core.NewBatch(scriptSchema)
	for !in.Full() {
		k := fmt.Sprintf("k%03d", rnd.IntN(1000))
		h := core.HashKey([]core.Value{core.StringValue(k)}, []int{0}, []core.Type{core.String})
		row := in.Append(1, h, 0, 1)
		row[0], row[1] = core.StringValue(k), core.IntValue(rnd.Int64N(1000))
	}
	out := core.NewEmitter(def.Out, func(x *core.Batch) error { x.Release(); return nil }, nil)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := op.Process(in, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*core.BatchSize), "ns/record")
}
