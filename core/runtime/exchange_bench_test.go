package runtime

import (
	"context"
	"fmt"
	"testing"

	"streamd/core"
	"streamd/core/source"
	"streamd/ring"
)

// BenchmarkExchange is the exchange's per-batch path from one source
// worker to N channels, on one goroutine: each op is a keyed source batch
// of 512 records routed (numbered, hashed, scattered) with its watermark
// candidate, and every 8 ops each channel takes what reached it
// (blockInput.pop: the block-order input, splitting gathered batches
// back) and releases it — channels that share cores with their worker and
// so find several batches waiting. With gathering off a channel gets a
// sub-batch of 512/N records and a candidate per source batch, 2N ring
// slots a source batch in all; with it (adaptive batching, the default)
// a channel's records and candidates share slots of up to 512 records, so
// the slots per record stay flat as N grows. Reported per record
// (ns/record), with slots and pieces (what the channels' loops see) per
// source batch; 0 allocs/op.
func BenchmarkExchange(b *testing.B) {
	for _, gather := range []bool{false, true} {
		for _, n := range []int{1, 2, 4, 8} {
			b.Run(fmt.Sprintf("gather=%v/channels=%d", gather, n), func(b *testing.B) { benchExchange(b, n, gather) })
		}
	}
}

// drainEvery is how many source batches BenchmarkExchange's channels let
// pass between two takes.
const drainEvery = 8

func benchExchange(b *testing.B, n int, gather bool) {
	src, err := source.Generator(source.GeneratorOptions{Seed: 1, Count: 1 << 40, Keys: 10_000})
	if err != nil {
		b.Fatal(err)
	}
	tmpl, err := src.Next(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	rings := make([]*ring.SPSC[*core.Batch], n)
	for c := range rings {
		rings[c], _ = ring.New[*core.Batch](1024)
	}
	sp, err := newSplitter(rings, source.GeneratorSchema, &Region{Channels: n, Key: []string{"key"}, Groups: 4096}, n)
	if err != nil {
		b.Fatal(err)
	}
	sp.cpu = &stageCPU{}
	if gather {
		sp.gatherOn(DefaultBatchLinger, func() int64 { return 0 })
		sp.flat = true
	}
	x := &exchange{src: src.(core.Splittable)}
	cfg := &routing{ids: []int{0}, rings: [][]*ring.SPSC[*core.Batch]{rings}, table: sp.table}
	if gather {
		cfg.held = [][]*held{sp.gather}
	}
	x.configs = []*routing{cfg}
	x.routes.Store(&x.configs)
	x.started.Store(0)
	ins := make([]*blockInput, n)
	for c := range ins {
		ins[c] = newBlockInput(x, c, 0, 0, core.NoTime, context.Background())
	}
	var pieces int
	take := func() {
		for _, in := range ins {
			for in.ri == nil || in.ri.i < len(in.ri.q) || in.ri.rg.Len() > 0 || (in.ri.held != nil && in.ri.held.slot.Load() != nil) {
				bt, err := in.pop(sp.cpu)
				if err != nil {
					b.Fatal(err)
				}
				pieces++
				bt.Release()
			}
		}
	}
	route := func(i int) {
		in := core.NewBatch(tmpl.Schema)
		in.AppendRange(tmpl, 0, tmpl.Len)
		if err := sp.route(in); err != nil {
			b.Fatal(err)
		}
		mk := core.NewMarker(core.Watermark)
		mk.Watermark = int64(i)
		if err := sp.route(mk); err != nil {
			b.Fatal(err)
		}
		if gather {
			if err := sp.settle(); err != nil {
				b.Fatal(err)
			}
		}
		if i%drainEvery == drainEvery-1 {
			take()
		}
	}
	for i := range 2 * drainEvery { // warm the batch pools
		route(i)
	}
	slots0 := uint64(0)
	for _, rg := range rings {
		slots0 += rg.Pushed()
	}
	pieces = 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		route(2*drainEvery + i)
	}
	b.StopTimer()
	take()
	slots := uint64(0)
	for _, rg := range rings {
		slots += rg.Pushed()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*tmpl.Len), "ns/record")
	b.ReportMetric(float64(slots-slots0)/float64(b.N), "slots/op")
	b.ReportMetric(float64(pieces)/float64(b.N), "pieces/op")
}
