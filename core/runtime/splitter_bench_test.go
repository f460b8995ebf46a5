package runtime

import (
	"testing"

	"streamd/core"
	"streamd/core/source"
	"streamd/ring"
)

// BenchmarkSplitterRoute is the splitter's per-batch path on its own: a
// keyed batch of 512 records numbered, hashed and pushed to one channel's
// ring (popped back on the same goroutine, no channel running). It is the
// baseline for per-batch costs added to route (the routed count of the
// backlog, adaptive batching); reported per record, 0 allocs/op.
func BenchmarkSplitterRoute(b *testing.B) {
	src, err := source.Generator(source.GeneratorOptions{Seed: 1, Count: core.BatchSize})
	if err != nil {
		b.Fatal(err)
	}
	in, err := src.Next(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	rg, _ := ring.New[*core.Batch](64)
	sp, err := newSplitter([]*ring.SPSC[*core.Batch]{rg}, source.GeneratorSchema, &Region{Channels: 1, Key: []string{"key"}, Groups: 4096}, 1)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := sp.route(in); err != nil {
			b.Fatal(err)
		}
		out, ok := rg.TryPop()
		if !ok || out != in {
			b.Fatal("the batch did not reach the ring")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*in.Len), "ns/record")
}
