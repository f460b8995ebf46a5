package runtime

import (
	"testing"

	"streamd/core"
	"streamd/core/source"
)

// unionOf is a union of generators of the given block counts.
func unionOf(t testing.TB, blocks ...int64) core.Source {
	var srcs []core.Source
	var names []string
	for i, n := range blocks {
		g, err := source.Generator(source.GeneratorOptions{Seed: 1, Count: n * source.GeneratorBlockRecords})
		if err != nil {
			t.Fatal(err)
		}
		srcs, names = append(srcs, g), append(names, string(rune('a'+i)))
	}
	u, err := source.Union(srcs, names, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	return u
}

// The watermark of a union is the minimum over the inputs still being
// read: none until every such input has an event time, and an exhausted
// input drops out. Inputs of 1 and 2 blocks: a0 b0 b1.
func TestInputTimes(t *testing.T) {
	if newInputTimes(core.NewReplayable(nil)) != nil {
		t.Fatal("inputTimes for a source that is not a union")
	}
	tm := newInputTimes(unionOf(t, 1, 2))
	step := func(b int, m int64) (int64, bool) {
		tm.at(b)
		tm.see(m)
		return tm.watermark(10)
	}
	if _, ok := step(0, 1000); ok {
		t.Fatal("a watermark before input b has an event time")
	}
	if wm, ok := step(1, 500); !ok || wm != 489 {
		t.Fatalf("after b0: %d %v, want 489", wm, ok)
	}
	// a is exhausted after a0: b alone decides, even below a's time.
	if wm, ok := step(2, 700); !ok || wm != 689 {
		t.Fatalf("after b1: %d %v, want 689 (a dropped out)", wm, ok)
	}
	if s := tm.String(); s != "1000 700" {
		t.Fatalf("checkpoint state %q", s)
	}
}

// The per-batch watermark work of a union (at, see, watermark) allocates
// nothing: 0 allocs/op. Blocks only move forward (an input whose last
// block is passed has ended), so the walk starts a fresh state after the
// last block.
func BenchmarkInputTimes(b *testing.B) {
	u := unionOf(b, 1<<20, 1<<20, 1<<20)
	const blocks = 3 << 20
	tm := newInputTimes(u)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		blk := i / 8 % blocks
		if blk < tm.block {
			tm = newInputTimes(u)
		}
		tm.at(blk)
		tm.see(int64(i))
		tm.watermark(1000)
	}
}
