package source

import (
	"context"
	"io"
	"math"
	"testing"
	"time"

	"streamd/core"
)

func TestGeneratorDeterministic(t *testing.T) {
	opts := GeneratorOptions{Seed: 42, Count: 1500, Keys: 50, Start: 1_000_000, Step: 10}
	a, err := Generator(opts)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Generator(opts)
	ra, pa := drain(t, a)
	rb, _ := drain(t, b)
	if len(ra) != 1500 || len(rb) != 1500 {
		t.Fatalf("%d and %d records, want 1500", len(ra), len(rb))
	}
	keys := map[string]int{}
	for i, r := range ra {
		if r[0].Int() != int64(i) || r[3].Time() != 1_000_000+int64(i)*10 || pa[i] != int64(i+1) {
			t.Fatalf("record %d: %v at %d", i, r, pa[i])
		}
		if v := r[2].Int(); v < 0 || v >= 1000 {
			t.Fatalf("record %d: value %d", i, v)
		}
		if len(r[1].Str()) != 7 || r[1].Str()[0] != 'k' {
			t.Fatalf("record %d: key %q", i, r[1].Str())
		}
		keys[r[1].Str()]++
		for f := range r {
			if r[f] != rb[i][f] {
				t.Fatalf("record %d differs between runs with one seed", i)
			}
		}
	}
	if len(keys) != 50 {
		t.Fatalf("%d distinct keys, want 50", len(keys))
	}
	c, _ := Generator(GeneratorOptions{Seed: 43, Count: 100, Keys: 50})
	rc, _ := drain(t, c)
	same := 0
	for i := range rc {
		if rc[i][1] == ra[i][1] {
			same++
		}
	}
	if same > 20 {
		t.Fatalf("seeds 42 and 43 share %d of 100 keys", same)
	}
	if a.(core.Sized).Size() != 1500 {
		t.Fatal("Size")
	}
}

func TestGeneratorZipf(t *testing.T) {
	g, err := Generator(GeneratorOptions{Seed: 1, Count: 20000, Keys: 100_000, Distribution: "zipf", ZipfS: 1.5})
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := drain(t, g)
	counts := map[string]int{}
	for _, r := range rows {
		counts[r[1].Str()]++
	}
	if counts["k000000"] < counts["k000001"] || counts["k000001"] < counts["k000010"] || counts["k000000"] < 20000/4 {
		t.Fatalf("not skewed: k0 %d, k1 %d, k10 %d", counts["k000000"], counts["k000001"], counts["k000010"])
	}
	if k := rows[0][1].Str(); len(k) != 6 && len(k) != 7 {
		t.Fatalf("key %q", k)
	}
}

func TestGeneratorOptionsErrors(t *testing.T) {
	for _, o := range []GeneratorOptions{
		{Count: -1}, {Rate: -1}, {Keys: -3}, {Distribution: "normal"}, {Distribution: "zipf", ZipfS: 0.9},
	} {
		if _, err := Generator(o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

// TestGeneratorRate: at 2,000 records/s, 100 records take at least 49.5 ms
// (record 99 is due then) and come out in partial batches (linger), not
// all at the end. The wall-clock run checks only the lower bound, which
// load cannot break; the batching is checked on a scripted clock (100 µs a
// reading), where a loaded machine cannot merge batches.
func TestGeneratorRate(t *testing.T) {
	read := func(g core.Source) (batches, n int) {
		for {
			b, err := g.Next(ctx)
			if err == io.EOF {
				return batches, n
			}
			if err != nil {
				t.Fatal(err)
			}
			batches++
			n += b.Len
			b.Release()
		}
	}
	opts := GeneratorOptions{Seed: 1, Count: 100, Rate: 2000}
	g, _ := Generator(opts)
	start := time.Now()
	batches, n := read(g)
	if d := time.Since(start); n != 100 || d < 49*time.Millisecond {
		t.Fatalf("wall clock: %d records in %d batches in %v", n, batches, d)
	}
	clock := &scriptedClock{t: time.Unix(1e6, 0), step: 100 * time.Microsecond}
	batches, n = read(withClock(t, opts, clock))
	if d := clock.t.Sub(time.Unix(1e6, 0)); n != 100 || batches < 10 || d < 49500*time.Microsecond {
		t.Fatalf("scripted clock: %d records in %d batches in %v", n, batches, d)
	}
}

func TestGeneratorUnboundedCtx(t *testing.T) {
	g, _ := Generator(GeneratorOptions{})
	if _, ok := g.(core.Sized); ok {
		t.Fatal("an unbounded generator claims a size")
	}
	c, cancel := context.WithCancel(ctx)
	for range 10 {
		b, err := g.Next(c)
		if err != nil || b.Len != core.BatchSize {
			t.Fatalf("%v %v", b, err)
		}
		b.Release()
	}
	cancel()
	if _, err := g.Next(c); err != context.Canceled {
		t.Fatalf("after cancel: %v", err)
	}
	// A rate-limited generator honours ctx while it sleeps: record 1 is
	// due in 1,000 s, so a Next that ignored ctx would hang the test.
	g, _ = Generator(GeneratorOptions{Rate: 0.001})
	b, _ := g.Next(ctx) // record 0 is due at once
	b.Release()
	c, cancel = context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := g.Next(c); err != context.DeadlineExceeded {
		t.Fatalf("sleeping Next: %v", err)
	}
	g.Close()
}

// mustGenerator is Generator(opts), failing t on an error.
func mustGenerator(t interface{ Fatal(...any) }, opts GeneratorOptions) core.Source {
	s, err := Generator(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Building records allocates nothing: a batch reused (the pool aside, which
// the race detector makes drop batches) fills with no allocation.
func TestGeneratorNoAllocs(t *testing.T) {
	for _, dist := range []string{"uniform", "zipf"} {
		g := generatorOf(t, mustGenerator(t, GeneratorOptions{Seed: 1, Distribution: dist}))
		b := core.NewBatch(GeneratorSchema)
		i := int64(0)
		if n := testing.AllocsPerRun(100, func() {
			b.Reset()
			g.appendRecords(b, i, core.BatchSize)
			i += core.BatchSize
		}); n != 0 {
			t.Errorf("%s: %g allocations a batch", dist, n)
		}
		b.Release()
	}
}

// BenchmarkGenerator: one op is one batch of core.BatchSize records.
func BenchmarkGenerator(b *testing.B) {
	for _, dist := range []string{"uniform", "zipf"} {
		b.Run(dist, func(b *testing.B) {
			g, _ := Generator(GeneratorOptions{Seed: 1, Distribution: dist})
			b.ReportAllocs()
			for range b.N {
				batch, err := g.Next(ctx)
				if err != nil {
					b.Fatal(err)
				}
				batch.Release()
			}
			b.ReportMetric(float64(b.N)*core.BatchSize/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// A rate schedule integrates piecewise: records due and due times agree.
func TestRateSchedule(t *testing.T) {
	rs, err := newRateSchedule([]RateStep{{0, 1000}, {2 * time.Second, 4000}, {3 * time.Second, 500}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		t    time.Duration
		want int64
	}{{0, 1}, {time.Second, 1001}, {2 * time.Second, 2001}, {2500 * time.Millisecond, 4001}, {3 * time.Second, 6001}, {5 * time.Second, 7001}} {
		if got := rs.due(c.t); got != c.want {
			t.Errorf("due(%s) = %d, want %d", c.t, got, c.want)
		}
	}
	for _, i := range []int64{0, 999, 2000, 4000, 6000, 6999} {
		at := rs.at(i)
		if rs.due(at+time.Microsecond) < i+1 || (at > time.Millisecond && rs.due(at-time.Millisecond) > i+1) {
			t.Errorf("record %d due at %s: due there %d", i, at, rs.due(at))
		}
	}
	if _, err := newRateSchedule([]RateStep{{time.Second, 10}}); err == nil {
		t.Error("first step after 0 accepted")
	}
	if _, err := newRateSchedule([]RateStep{{0, 10}, {0, 20}}); err == nil {
		t.Error("steps out of order accepted")
	}
}

// TestGeneratorStampsIntendedTime: in rate mode each batch carries the
// intended send time of its first record (t0 + i/rate), even when the
// consumer falls behind, so latency is measured without coordinated
// omission; in closed loop the generator leaves Stamp to the runtime.
func TestGeneratorStampsIntendedTime(t *testing.T) {
	const rate = 20000 // records/s: one record every 50 µs
	g, _ := Generator(GeneratorOptions{Seed: 1, Count: 3000, Rate: rate})
	var t0 int64
	var i int64 // index of the batch's first record
	for n := 0; ; n++ {
		b, err := g.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if b.Stamp == 0 {
			t.Fatalf("batch %d: no stamp in rate mode", n)
		}
		if n == 0 {
			t0 = b.Stamp
		}
		want := t0 + i*1e9/rate
		if d := b.Stamp - want; d < -1000 || d > 1000 {
			t.Fatalf("batch %d (record %d): stamp %d, want t0+%d (off by %d ns)", n, i, b.Stamp, i*1e9/rate, d)
		}
		if b.Stamp > time.Now().UnixNano() {
			t.Fatalf("batch %d: stamped in the future", n)
		}
		if n == 1 {
			// Fall behind: the next batch is due long before it is read,
			// and its stamp says so.
			time.Sleep(30 * time.Millisecond)
		}
		if n == 2 && time.Now().UnixNano()-b.Stamp < int64(20*time.Millisecond) {
			t.Fatalf("batch after a stall stamped %s before it was read, want ≥ 20ms", time.Duration(time.Now().UnixNano()-b.Stamp))
		}
		i += int64(b.Len)
		b.Release()
	}
	if i != 3000 {
		t.Fatalf("%d records, want 3000", i)
	}
	c, _ := Generator(GeneratorOptions{Count: 10})
	b, err := c.Next(ctx)
	if err != nil || b.Stamp != 0 {
		t.Fatalf("closed loop: stamp %d, err %v; want 0", b.Stamp, err)
	}
}

// A rate must be finite and at most MaxRate (beyond, the records due would
// overflow and the generator spin without end); 0 means no rate, but not
// in a rate step.
func TestGeneratorRateBounds(t *testing.T) {
	for _, r := range []float64{math.Inf(1), math.Inf(-1), math.NaN(), -1, MaxRate * 2} {
		if _, err := Generator(GeneratorOptions{Count: 10, Rate: r}); err == nil {
			t.Errorf("rate %g accepted", r)
		}
		if _, err := Generator(GeneratorOptions{Count: 10, RateSteps: []RateStep{{Rate: r}}}); err == nil {
			t.Errorf("rate step %g accepted", r)
		}
	}
	if _, err := Generator(GeneratorOptions{Count: 10, RateSteps: []RateStep{{Rate: 0}}}); err == nil {
		t.Error("rate step 0 accepted")
	}
	for _, r := range []float64{0, 1, MaxRate} {
		if _, err := Generator(GeneratorOptions{Count: 10, Rate: r}); err != nil {
			t.Errorf("rate %g: %v", r, err)
		}
	}
	rs, err := newRateSchedule([]RateStep{{Rate: MaxRate}})
	if err != nil {
		t.Fatal(err)
	}
	if d := rs.due(400 * 24 * time.Hour); d <= 0 { // 3.5e19 records: clamped, not wrapped
		t.Errorf("due after 400 days at the maximum rate: %d", d)
	}
}

// A paced generator wakes once per batch, not once per record: at 200 K
// records/s (a record every 5 µs) each batch holds the records due within
// core.Linger of its first (21), and Next pauses once for it, until
// Linger after the first record was due. At a rate that fills a batch
// within Linger, the pause ends when the batch's last record is due.
// The clock moves only when the generator pauses.
func TestGeneratorPacedWakesPerBatch(t *testing.T) {
	for _, c := range []struct {
		rate    float64
		perWake int // records per batch
	}{{200_000, 21}, {20_000_000, core.BatchSize}} {
		s, err := Generator(GeneratorOptions{Seed: 1, Count: 40 * int64(c.perWake), Rate: c.rate})
		if err != nil {
			t.Fatal(err)
		}
		g := generatorOf(t, s)
		clock := time.Unix(1000, 0)
		g.now = func() time.Time { return clock }
		var pauses []time.Duration
		g.pause = func(_ context.Context, d time.Duration) error {
			pauses = append(pauses, d)
			clock = clock.Add(d)
			return nil
		}
		var lens []int
		for {
			b, err := s.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			lens = append(lens, b.Len)
			b.Release()
		}
		for k, n := range lens[:len(lens)-1] { // the last ends at Count
			if n < c.perWake-1 || n > c.perWake {
				t.Fatalf("rate %g: batch %d has %d records, want %d", c.rate, k, n, c.perWake)
			}
		}
		if batches := len(lens); batches < 40 || batches > 41 || len(pauses) != batches {
			t.Fatalf("rate %g: %d batches, %d pauses (%v…), want 40 or 41 of each", c.rate, batches, len(pauses), pauses[:3])
		}
		want := min(core.Linger, time.Duration(float64(c.perWake-1)/c.rate*1e9))
		if d := pauses[0]; d < want-time.Microsecond || d > want {
			t.Fatalf("rate %g: first pause %v, want %v", c.rate, d, want)
		}
	}
}
