package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"streamd/core"
	"streamd/internal/tier"
)

// batchText is a batch as text: every record's fields and Pos, and the
// metadata a source must leave zero (Seq, Hash, Time, Stamp).
func batchText(b *core.Batch) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "len %d stamp %d kind %s\n", b.Len, b.Stamp, b.Kind)
	for i := range b.Len {
		r := b.Row(i)
		fmt.Fprintf(&sb, "%d %s %d %d @%d seq %d hash %d time %d\n", r[0].Int(), r[1].Str(), r[2].Int(), r[3].Time(), b.Pos[i], b.Seq[i], b.Hash[i], b.Time[i])
	}
	return sb.String()
}

// sequentialBatches reads up to max batches of s with Next.
func sequentialBatches(t testing.TB, s core.Source, max int) []string {
	t.Helper()
	var out []string
	for len(out) < max {
		b, err := s.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, batchText(b))
		b.Release()
	}
	return out
}

// readBlocksParallel reads blocks 0 … blocks-1 of s with m workers, worker
// w taking blocks w, w+m, … (round-robin), all at once, and returns each
// block's batches, in block order.
func readBlocksParallel(t testing.TB, s core.Splittable, blocks int, m int) [][]string {
	t.Helper()
	out := make([][]string, blocks)
	errs := make([]error, m)
	var wg sync.WaitGroup
	for w := range m {
		wg.Go(func() {
			for b := w; b < blocks; b += m {
				err := s.ReadBlock(ctx, b, nil, func(batch *core.Batch) error {
					out[b] = append(out[b], batchText(batch))
					batch.Release()
					return nil
				})
				if err != nil {
					errs[w] = fmt.Errorf("block %d: %w", b, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGeneratorBlocks: M = 1, 2, 3 and 8 workers reading the blocks
// round-robin at once, their batches concatenated in block order, give
// exactly the batches of a sequential read (same lengths, values, Pos, and
// Seq, Hash, Time and Stamp zero), for both key distributions, counts that
// end inside a batch, on a batch boundary, on a block boundary and inside
// the first batch, and unbounded (the first five blocks).
func TestGeneratorBlocks(t *testing.T) {
	for _, dist := range []string{"uniform", "zipf"} {
		for _, count := range []int64{0, 1, 100, core.BatchSize, 3 * GeneratorBlockRecords, 3*GeneratorBlockRecords + 5*core.BatchSize + 17} {
			opts := GeneratorOptions{Seed: 9, Count: count, Keys: 500, Distribution: dist, Start: 1e12, Step: 3}
			name := fmt.Sprintf("%s count %d", dist, count)
			src, err := Generator(opts)
			if err != nil {
				t.Fatal(err)
			}
			s, ok := src.(core.Splittable)
			if !ok {
				t.Fatalf("%s: %T is not splittable", name, src)
			}
			blocks := s.Blocks()
			switch {
			case count == 0 && blocks != -1:
				t.Fatalf("%s: %d blocks, want -1 (unbounded)", name, blocks)
			case count > 0 && int64(blocks) != (count+GeneratorBlockRecords-1)/GeneratorBlockRecords:
				t.Fatalf("%s: %d blocks", name, blocks)
			case count == 0:
				blocks = 5
			}
			seq, _ := Generator(opts)
			want := sequentialBatches(t, seq, blocks*GeneratorBlockRecords/core.BatchSize)
			for _, m := range []int{1, 2, 3, 8} {
				var got []string
				for b, batches := range readBlocksParallel(t, s, blocks, m) {
					if n := len(batches); n == 0 || n > GeneratorBlockRecords/core.BatchSize {
						t.Fatalf("%s, %d workers: block %d in %d batches", name, m, b, n)
					}
					got = append(got, batches...)
				}
				if len(got) != len(want) {
					t.Fatalf("%s, %d workers: %d batches, sequential %d", name, m, len(got), len(want))
				}
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%s, %d workers: batch %d differs:\n%.300s…\nsequential:\n%.300s…", name, m, i, got[i], want[i])
					}
				}
			}
			src.Close()
		}
	}
}

// A rate-limited generator is not splittable: its batches follow the
// clock.
func TestGeneratorRateNotSplittable(t *testing.T) {
	for _, o := range []GeneratorOptions{{Rate: 1000}, {Rate: 1000, Count: 10}, {RateSteps: []RateStep{{0, 10}}}} {
		s, err := Generator(o)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := s.(core.Splittable); ok {
			t.Errorf("%+v: a rate-limited generator is splittable", o)
		}
		if _, ok := s.(core.Sized); ok != (o.Count > 0) {
			t.Errorf("%+v: Sized %v", o, ok)
		}
	}
	s, _ := Generator(GeneratorOptions{})
	if _, ok := s.(core.Sized); ok {
		t.Error("an unbounded generator claims a size")
	}
}

// ReadBlock refuses blocks out of range, stops at emit's error (returned
// unchanged) and at ctx, and fails after Close.
func TestGeneratorReadBlockErrors(t *testing.T) {
	src, _ := Generator(GeneratorOptions{Count: 2*GeneratorBlockRecords + 1})
	s := src.(core.Splittable)
	drop := func(b *core.Batch) error { b.Release(); return nil }
	for _, b := range []int{-1, 3, 1 << 62} {
		if err := s.ReadBlock(ctx, b, nil, drop); err == nil {
			t.Errorf("block %d of 3 read", b)
		}
	}
	// The last block holds one record.
	n := 0
	if err := s.ReadBlock(ctx, 2, nil, func(b *core.Batch) error { n += b.Len; b.Release(); return nil }); err != nil || n != 1 {
		t.Fatalf("last block: %d records, %v", n, err)
	}
	stop := errors.New("stop")
	calls := 0
	err := s.ReadBlock(ctx, 0, nil, func(b *core.Batch) error { calls++; b.Release(); return stop })
	if err != stop || calls != 1 {
		t.Fatalf("emit's error: %v after %d calls", err, calls)
	}
	c, cancel := context.WithCancel(ctx)
	calls = 0
	err = s.ReadBlock(c, 1, nil, func(b *core.Batch) error { calls++; cancel(); b.Release(); return nil })
	if err != context.Canceled || calls != 1 {
		t.Fatalf("cancelled: %v after %d batches", err, calls)
	}
	// Unbounded: far blocks exist, up to where the index would overflow.
	u, _ := Generator(GeneratorOptions{})
	var first int64
	if err := u.(core.Splittable).ReadBlock(ctx, 1<<40, nil, func(b *core.Batch) error {
		if first == 0 {
			first = b.Row(0)[0].Int()
		}
		b.Release()
		return nil
	}); err != nil || first != (1<<40)*GeneratorBlockRecords {
		t.Fatalf("unbounded block 2⁴⁰: first record %d, %v", first, err)
	}
	if err := u.(core.Splittable).ReadBlock(ctx, 1<<62, nil, drop); err == nil {
		t.Fatal("a block past the last index read")
	}
	src.Close()
	if err := s.ReadBlock(ctx, 0, nil, drop); !errors.Is(err, errClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// TestGeneratorProperties (rapid): for any seed, key count, distribution,
// count and cut, (1) skipping n records then reading gives the records a
// read-and-drop of n gives, (2) blocks read by any number of workers give
// the sequential batches, (3) records are a function of (seed, index): a
// second generator agrees record by record.
func TestGeneratorProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		opts := GeneratorOptions{
			Seed:         rapid.Uint64().Draw(rt, "seed"),
			Count:        rapid.Int64Range(0, tier.Pick[int64](1, 3)*GeneratorBlockRecords+700).Draw(rt, "count"),
			Keys:         rapid.IntRange(1, 5000).Draw(rt, "keys"),
			Distribution: rapid.SampledFrom([]string{"uniform", "zipf"}).Draw(rt, "dist"),
			ZipfS:        rapid.Float64Range(1.01, 4).Draw(rt, "zipf_s"),
			Start:        rapid.Int64Range(-1e15, 1e15).Draw(rt, "start"),
			Step:         rapid.Int64Range(1, 1e9).Draw(rt, "step"),
		}
		end := opts.Count
		if end == 0 {
			end = tier.Pick[int64](1, 2)*GeneratorBlockRecords + 300 // how far an unbounded one is read
		}
		cut := rapid.Int64Range(0, end).Draw(rt, "cut")
		m := rapid.IntRange(1, 5).Draw(rt, "workers")

		plain, _ := readRecords(t, mustGenerator(rt, opts), int(end))
		g := mustGenerator(rt, opts)
		if n, err := g.(core.Skipper).SkipRecords(ctx, cut); n != cut || err != nil {
			rt.Fatalf("skip %d: %d, %v", cut, n, err)
		}
		rest, _ := readRecords(t, g, int(end-cut))
		if fmt.Sprint(rest) != fmt.Sprint(plain[cut:]) {
			rt.Fatalf("skip %d then read: %d records, read and drop: %d", cut, len(rest), len(plain)-int(cut))
		}

		s := mustGenerator(rt, opts).(core.Splittable)
		blocks := s.Blocks()
		if blocks < 0 {
			blocks = int((end + GeneratorBlockRecords - 1) / GeneratorBlockRecords)
		}
		want := sequentialBatches(t, mustGenerator(rt, opts), blocks*GeneratorBlockRecords/core.BatchSize)
		var got []string
		for _, batches := range readBlocksParallel(t, s, blocks, m) {
			got = append(got, batches...)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			rt.Fatalf("%d workers: %d batches differ from the %d sequential ones", m, len(got), len(want))
		}

		a, b := generatorOf(t, mustGenerator(rt, opts)), generatorOf(t, mustGenerator(rt, opts))
		for range 100 {
			i := rapid.Int64Range(0, 1<<61).Draw(rt, "i")
			ka, va := a.record(i)
			kb, vb := b.record(i)
			if ka != kb || va != vb || ka >= uint64(opts.Keys) || va < 0 || va >= 1000 {
				rt.Fatalf("record %d: (%d, %d) and (%d, %d)", i, ka, va, kb, vb)
			}
		}
	})
}

// BenchmarkGeneratorBlock, beside BenchmarkGenerator: one op is one block
// (GeneratorBlockRecords records, 16 batches) read by one worker.
func BenchmarkGeneratorBlock(b *testing.B) {
	for _, dist := range []string{"uniform", "zipf"} {
		b.Run(dist, func(b *testing.B) {
			s := mustGenerator(b, GeneratorOptions{Seed: 1, Distribution: dist}).(core.Splittable)
			release := func(batch *core.Batch) error { batch.Release(); return nil }
			b.ReportAllocs()
			for block := 0; b.Loop(); block++ {
				if err := s.ReadBlock(ctx, block, nil, release); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)*GeneratorBlockRecords/b.Elapsed().Seconds(), "records/s")
		})
	}
}
