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
func BenchmarkSplitterRoute(b *testing.B) { benchRoute(b, false) }

// BenchmarkSplitterRouteGathered is BenchmarkSplitterRoute with adaptive
// batching on (the runtime's default) and the end of each source
// iteration: a full batch is taken as it is and sent at once, so the
// per-batch cost is that of the flush rules alone. 0 allocs/op.
func BenchmarkSplitterRouteGathered(b *testing.B) { benchRoute(b, true) }

func benchRoute(b *testing.B, gather bool) {
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
	sp.cpu = &stageCPU{}
	if gather {
		sp.gatherOn(DefaultBatchLinger, func() int64 { return 0 })
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if gather {
			if err := sp.settle(); err != nil {
				b.Fatal(err)
			}
		}
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
