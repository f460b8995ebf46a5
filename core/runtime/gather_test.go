package runtime

import (
	"math/rand/v2"
	"slices"
	"testing"

	"streamd/core"
)

// collectPusher keeps what the gatherer hands on.
type collectPusher struct{ got []*core.Batch }

func (c *collectPusher) Push(b *core.Batch) error { c.got = append(c.got, b); return nil }

// Gathered batches, cut at random points as a parts sink's chunks cut
// them, filled in by the workers, hold exactly the runs the merger listed,
// in order; every channel batch is let go by its last reader (merger and
// every gathered batch listing it), not before.
func TestGatherCutFill(t *testing.T) {
	schema := core.MustSchema(core.Field{Name: "v", Type: core.Int64})
	rnd := rand.New(rand.NewPCG(7, 7))
	for round := 0; round < 200; round++ {
		out := &collectPusher{}
		g := &gatherer{schema: schema, next: out}
		var want []int64
		var shareds []*shared
		next := int64(0)
		for range 1 + rnd.IntN(8) { // channel batches, each added in a few runs
			b := core.NewBatch(schema)
			n := 1 + rnd.IntN(core.BatchSize)
			for range n {
				b.Append(uint64(next), 0, core.NoTime, 0)[0] = core.IntValue(next)
				next++
			}
			for from := 0; from < n; {
				to := min(n, from+1+rnd.IntN(300))
				if err := g.add(b, from, to); err != nil {
					t.Fatal(err)
				}
				for i := from; i < to; i++ {
					want = append(want, b.Row(i)[0].Int())
				}
				from = to
			}
			shareds = append(shareds, b.Control.(*shared))
			g.done(b)
		}
		if err := g.flush(); err != nil {
			t.Fatal(err)
		}
		// Cut every gathered batch once at a random point, as pushChunks
		// does at a chunk's end.
		var parts []*core.Batch
		for _, b := range out.got {
			if n := records(b); n > 1 {
				k := 1 + rnd.IntN(n-1)
				rest := cut(b, k)
				if records(b) != k || records(rest) != n-k {
					t.Fatalf("cut at %d of %d: %d and %d", k, n, records(b), records(rest))
				}
				parts = append(parts, b, rest)
			} else {
				parts = append(parts, b)
			}
		}
		var got []int64
		for i, b := range parts {
			fill(b)
			if b.Control != nil {
				t.Fatal("a filled batch still lists runs")
			}
			for j := 0; j < b.Len; j++ {
				got = append(got, b.Row(j)[0].Int())
			}
			if i < len(parts)-1 {
				b.Release()
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: %d records filled, want %d, or out of order", round, len(got), len(want))
		}
		for i, sh := range shareds {
			if sh.b != nil {
				t.Fatalf("round %d: channel batch %d not let go (%d references)", round, i, sh.refs.Load())
			}
		}
		parts[len(parts)-1].Release()
	}
}
