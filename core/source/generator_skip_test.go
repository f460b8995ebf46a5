package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"testing"
	"time"

	"streamd/core"
	"streamd/internal/tier"
)

// scriptedClock is a generator's schedule clock moved by the test: each
// reading returns the last one plus step.
type scriptedClock struct {
	t    time.Time
	step time.Duration
}

func (c *scriptedClock) now() time.Time {
	c.t = c.t.Add(c.step)
	return c.t
}

// withClock builds a generator whose schedule reads c.
func withClock(t *testing.T, opts GeneratorOptions, c *scriptedClock) core.Source {
	t.Helper()
	s, err := Generator(opts)
	if err != nil {
		t.Fatal(err)
	}
	generatorOf(t, s).now = c.now
	return s
}

// generatorOf is the *generator inside s, a Generator.
func generatorOf(t *testing.T, s core.Source) *generator {
	t.Helper()
	switch g := s.(type) {
	case *generator:
		return g
	case sizedGenerator:
		return g.generator
	case blockGenerator:
		return g.generator
	case sizedBlockGenerator:
		return g.generator
	}
	t.Fatalf("%T is not a generator", s)
	return nil
}

// readRecords reads up to n records of s as "seq key value ts @pos", and
// the Stamp of each batch's first record by its seq.
func readRecords(t *testing.T, s core.Source, n int) (recs []string, stamps map[int64]int64) {
	t.Helper()
	stamps = map[int64]int64{}
	for len(recs) < n {
		b, err := s.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		stamps[b.Row(0)[0].Int()] = b.Stamp
		for i := 0; i < b.Len && len(recs) < n; i++ {
			r := b.Row(i)
			recs = append(recs, fmt.Sprintf("%d %s %d %d @%d", r[0].Int(), r[1].Str(), r[2].Int(), r[3].Time(), b.Pos[i]))
		}
		b.Release()
	}
	return recs, stamps
}

// TestGeneratorSkipRecords: skipping n records, then reading, gives exactly
// the records n… of a plain read, for several seeds, both key
// distributions, with and without a rate (its clock moved a second per
// reading, so that nothing waits), bounded or not; skipping past Count
// stops there with io.EOF.
func TestGeneratorSkipRecords(t *testing.T) {
	const total = 5000
	rates := []struct {
		name  string
		rate  float64
		steps []RateStep
	}{{"no rate", 0, nil}, {"rate", 1000, nil}, {"rate steps", 0, []RateStep{{0, 1000}, {2 * time.Second, 5000}}}}
	for _, seed := range tier.Pick([]uint64{7}, []uint64{0, 7, 42}) {
		for _, dist := range []string{"uniform", "zipf"} {
			for _, r := range rates {
				for _, count := range []int64{0, total} {
					opts := GeneratorOptions{Seed: seed, Count: count, Keys: 300, Distribution: dist, Rate: r.rate, RateSteps: r.steps, Start: 1e9, Step: 7}
					name := fmt.Sprintf("seed %d %s %s count %d", seed, dist, r.name, count)
					clock := func() *scriptedClock { return &scriptedClock{t: time.Unix(1e6, 0), step: time.Second} }
					plain, _ := readRecords(t, withClock(t, opts, clock()), total)
					if len(plain) != total {
						t.Fatalf("%s: %d records", name, len(plain))
					}
					for _, cut := range []int64{0, 1, 511, 512, 1000, 3888, total - 1, total} {
						g := withClock(t, opts, clock())
						n, err := g.(core.Skipper).SkipRecords(ctx, cut)
						if n != cut || err != nil {
							t.Fatalf("%s: skip %d: %d, %v", name, cut, n, err)
						}
						rest, _ := readRecords(t, g, total-int(cut))
						if fmt.Sprint(rest) != fmt.Sprint(plain[cut:]) {
							t.Fatalf("%s: after skipping %d: %d records %.80v…, want %d %.80v…", name, cut, len(rest), rest, total-int(cut), plain[cut:])
						}
					}
					if count == 0 {
						continue
					}
					g := withClock(t, opts, clock())
					if n, err := g.(core.Skipper).SkipRecords(ctx, total+10); n != total || err != io.EOF {
						t.Fatalf("%s: skip past Count: %d, %v", name, n, err)
					}
					if _, err := g.Next(ctx); err != io.EOF {
						t.Fatalf("%s: Next after skipping to Count: %v", name, err)
					}
				}
			}
		}
	}
	g, _ := Generator(GeneratorOptions{})
	c, cancel := context.WithCancel(ctx)
	cancel()
	if n, err := g.(core.Skipper).SkipRecords(c, 10); n != 0 || err != context.Canceled {
		t.Fatalf("cancelled skip: %d, %v", n, err)
	}
	if _, err := g.(core.Skipper).SkipRecords(ctx, -1); err == nil {
		t.Fatal("negative skip accepted")
	}
	g.Close()
	if _, err := g.(core.Skipper).SkipRecords(ctx, 1); !errors.Is(err, errClosed) {
		t.Fatalf("skip after Close: %v", err)
	}
}

// TestGeneratorRestoredPacing: a rate-limited generator restored at record
// N (a job killed after about 4 s at 1,000 records/s, checkpoint at 3888)
// hands record N over at once, due now (its Stamp, the intended send time,
// is the clock's reading), and paces the records after it from there at
// the rate of N's place in the schedule, instead of first sitting out the
// N/rate seconds of the skipped records. Through core.Replayable, which
// uses the generator's SkipRecords.
func TestGeneratorRestoredPacing(t *testing.T) {
	const n = 3888
	for _, tc := range []struct {
		name  string
		opts  GeneratorOptions
		every time.Duration // between records after n
	}{
		{"rate", GeneratorOptions{Seed: 3, Rate: 1000}, time.Millisecond},
		{"rate steps", GeneratorOptions{Seed: 3, RateSteps: []RateStep{{0, 1000}, {2 * time.Second, 5000}}}, 200 * time.Microsecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The clock moves 1 µs per reading, then (below) 1 ms: no record
			// is ever waited for in real time.
			clock := &scriptedClock{t: time.Unix(1e6, 0), step: time.Microsecond}
			r := core.NewReplayable(withClock(t, tc.opts, clock))
			if err := r.Skip(n); err != nil {
				t.Fatal(err)
			}
			// Sitting out the skipped records' time would take 3.9 s (2.4 s
			// with the steps).
			c, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			b, err := r.Next(c)
			if err != nil {
				t.Fatalf("first Next after the restore: %v", err)
			}
			anchor := time.Unix(1e6, 0).Add(time.Microsecond).UnixNano() // the first reading
			if seq := b.Row(0)[0].Int(); seq != n || b.Pos[0] != n+1 || b.Stamp != anchor {
				t.Fatalf("first record %d at %d, stamp %d: want record %d due now (%d)", seq, b.Pos[0], b.Stamp, n, anchor)
			}
			got := int64(b.Len)
			b.Release()
			clock.step = time.Millisecond
			for got < 2000 {
				b, err := r.Next(c)
				if err != nil {
					t.Fatal(err)
				}
				seq := b.Row(0)[0].Int()
				if seq != n+got {
					t.Fatalf("record %d, want %d", seq, n+got)
				}
				want := anchor + int64(seq-n)*int64(tc.every)
				if d := b.Stamp - want; d < -1000 || d > 1000 {
					t.Fatalf("record %d due at anchor+%s, want anchor+%s", seq, time.Duration(b.Stamp-anchor), time.Duration(want-anchor))
				}
				got += int64(b.Len)
				b.Release()
			}
			if r.Position() != n+got {
				t.Fatalf("position %d, want %d", r.Position(), n+got)
			}
		})
	}
}

// TestGeneratorSkipO1: skipping 10¹⁵ records takes no time (the index
// moves; nothing is drawn), and the record after them is record 10¹⁵.
func TestGeneratorSkipO1(t *testing.T) {
	g, _ := Generator(GeneratorOptions{Seed: 5, Distribution: "zipf"})
	const n = 1_000_000_000_000_000
	if got, err := g.(core.Skipper).SkipRecords(ctx, n); got != n || err != nil {
		t.Fatalf("skip: %d, %v", got, err)
	}
	b, err := g.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	k, v := generatorOf(t, g).record(n)
	if r := b.Row(0); r[0].Int() != n || b.Pos[0] != n+1 || r[1].Str() != generatorOf(t, g).keys[k] || r[2].Int() != v {
		t.Fatalf("after skipping 10¹⁵: %v at %d", r, b.Pos[0])
	}
	b.Release()
	if _, err := g.(core.Skipper).SkipRecords(ctx, math.MaxInt64); err == nil {
		t.Fatal("a skip past the last index accepted")
	}
}

// BenchmarkGeneratorSkip, beside BenchmarkGenerator: one op skips
// core.BatchSize records (O(1): the index moves).
func BenchmarkGeneratorSkip(b *testing.B) {
	for _, dist := range []string{"uniform", "zipf"} {
		b.Run(dist, func(b *testing.B) {
			g, _ := Generator(GeneratorOptions{Seed: 1, Distribution: dist})
			b.ReportAllocs()
			for range b.N {
				if _, err := g.(core.Skipper).SkipRecords(ctx, core.BatchSize); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)*core.BatchSize/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// TestGeneratorLag: a rate-limited generator's lag is the records its
// schedule has made due that Next has not handed over, capped at Count;
// 0 before the first Next and without a rate.
func TestGeneratorLag(t *testing.T) {
	c := &scriptedClock{t: time.Unix(1000, 0)}
	s := withClock(t, GeneratorOptions{Seed: 1, Count: 1000, Rate: 1000}, c)
	lag := func() int64 { return s.(core.Lagging).Lag() }
	if got := lag(); got != 0 {
		t.Fatalf("lag before the first Next = %d, want 0", got)
	}
	b, err := s.Next(ctx) // record 0 is due at once; record 1 only 1 ms later
	if err != nil || b.Len != 1 {
		t.Fatalf("first Next: %v records, %v", b.Len, err)
	}
	b.Release()
	if got := lag(); got != 0 {
		t.Fatalf("lag after catching up = %d, want 0", got)
	}
	c.t = c.t.Add(2 * time.Second) // records 0 … 2000 due; Count caps at 1000
	if got := lag(); got != 999 {
		t.Fatalf("lag 2 s later = %d, want 999 (Count 1000 less 1 handed over)", got)
	}
	b, _ = s.Next(ctx)
	n := b.Len
	b.Release()
	if got := lag(); n != core.BatchSize || got != int64(999-n) {
		t.Fatalf("after a batch of %d: lag %d, want %d", n, got, 999-n)
	}
	g, _ := Generator(GeneratorOptions{Seed: 1, Count: 1000})
	b, _ = g.Next(ctx)
	b.Release()
	if got := g.(core.Lagging).Lag(); got != 0 {
		t.Fatalf("lag without a rate = %d, want 0", got)
	}
	u, _ := Generator(GeneratorOptions{Seed: 1, Rate: 1000})
	uc := &scriptedClock{t: time.Unix(1000, 0)}
	generatorOf(t, u).now = uc.now
	b, _ = u.Next(ctx)
	b.Release()
	uc.t = uc.t.Add(2 * time.Second)
	if got := u.(core.Lagging).Lag(); got != 2000 { // records 1 … 2000 due, no Count
		t.Fatalf("unbounded lag 2 s later = %d, want 2000", got)
	}
}
