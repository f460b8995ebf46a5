package runtime

import (
	"math/rand/v2"
	"slices"
	"testing"

	"streamd/core"
)

// BenchmarkAheadCheck is event_time.max_ahead's cost on a full batch of
// slightly out-of-order event times (none ahead), in ns a record, beside
// the loop admit runs without it (the largest event time only).
func BenchmarkAheadCheck(b *testing.B) {
	schema, err := core.NewSchema(core.Field{Name: "ts", Type: core.Timestamp})
	if err != nil {
		b.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(1, 1))
	times := make([]int64, core.BatchSize)
	for i := range times {
		times[i] = int64(i)*1e9 - rnd.Int64N(5e9)
	}
	bt := core.NewBatch(schema)
	for range core.BatchSize {
		bt.Append(0, 0, core.NoTime, 0)
	}
	errs, _ := core.NewErrorPolicy(core.Skip, "")
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			a := &aheadCheck{max: 3600e9, scratch: make([]int64, 0, core.BatchSize)}
			b.ReportAllocs()
			var maxT int64
			for range b.N {
				copy(bt.Time, times)
				if on {
					if err := a.apply(bt, errs); err != nil || bt.Len != core.BatchSize {
						b.Fatal(err, bt.Len)
					}
				}
				for _, t := range bt.Time[:bt.Len] {
					maxT = max(maxT, t)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*core.BatchSize), "ns/record")
		})
	}
}

// nth is the k-th smallest, for every k, of random slices with many
// repeats, sorted and reversed runs.
func TestNth(t *testing.T) {
	rnd := rand.New(rand.NewPCG(2, 3))
	for n := 1; n < 300; n += 1 + n/8 {
		for _, gen := range []func(i int) int64{
			func(int) int64 { return rnd.Int64N(5) },
			func(int) int64 { return rnd.Int64() - rnd.Int64() },
			func(i int) int64 { return int64(i) },
			func(i int) int64 { return int64(-i) },
		} {
			xs := make([]int64, n)
			for i := range xs {
				xs[i] = gen(i)
			}
			sorted := slices.Sorted(slices.Values(xs))
			for k := range n {
				ys := slices.Clone(xs)
				if got := nth(ys, k); got != sorted[k] {
					t.Fatalf("n %d, k %d: %d, want %d (%v)", n, k, got, sorted[k], xs)
				}
			}
		}
	}
}
