package nexmark

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"streamd/core"
	"streamd/core/runtime"
	"streamd/perf"
)

// testConfig spreads 20k events over 40 s of event time (2 ms apart), so
// that windowed queries fire several windows.
func testConfig(seed uint64) Config {
	return Config{Seed: seed, Count: 20_000, InterEventDelay: 2_000_000}
}

// events generates the config's events directly.
func events(t testing.TB, cfg Config) [][]core.Value {
	g, err := NewGenerator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]core.Value, cfg.Count)
	for n := range out {
		out[n] = make([]core.Value, Schema.Width())
		g.Event(out[n], int64(n))
	}
	return out
}

// collect is a sink that renders every record as comma-separated text.
type collect struct {
	s     *core.Schema
	lines []string
}

func (c *collect) Open(s *core.Schema) error { c.s = s; return nil }
func (c *collect) Write(b *core.Batch) error {
	for i := 0; i < b.Len; i++ {
		c.lines = append(c.lines, render(c.s, b.Row(i)))
	}
	return nil
}
func (c *collect) Close() error { return nil }
func (c *collect) Abort()       {}

func render(s *core.Schema, row []core.Value) string {
	var buf []byte
	for i, f := range s.Fields {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = core.AppendText(buf, f.Type, row[i])
	}
	return string(buf)
}

func text(t core.Type, v core.Value) string { return string(core.AppendText(nil, t, v)) }

func ts(ns int64) string { return text(core.Timestamp, core.TimeValue(ns)) }

func runQuery(t *testing.T, q Query, cfg Config, channels int) []string {
	t.Helper()
	return runQueryWith(t, q, cfg, channels, 0)
}

// runQueryWith runs q with the given source parallelism (-1: the single
// source stage; 0: the engine's choice).
func runQueryWith(t *testing.T, q Query, cfg Config, channels, sources int) []string {
	t.Helper()
	g, err := NewGenerator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sink := &collect{}
	job, err := q.Build(g, channels, sink)
	if err != nil {
		t.Fatal(err)
	}
	job.RingSize = 8
	job.SourceParallelism = sources
	rep, err := runtime.Run(context.Background(), job)
	if err != nil {
		t.Fatalf("%s: %v", q.Name, err)
	}
	if rep.Late != 0 {
		t.Fatalf("%s: %d late records", q.Name, rep.Late)
	}
	return sink.lines
}

// brute computes each query's output directly from the events.
var brute = map[string]func(evs [][]core.Value) []string{
	"nexmark-q0": func(evs [][]core.Value) []string {
		out := make([]string, len(evs))
		for i, e := range evs {
			out[i] = render(Schema, e)
		}
		return out
	},
	"nexmark-q1": func(evs [][]core.Value) []string {
		var out []string
		for _, e := range evs {
			if e[FKind].Int() == Bid {
				out = append(out, fmt.Sprintf("%d,%d,%s,%s", e[FAuction].Int(), e[FBidder].Int(),
					text(core.Float64, core.FloatValue(float64(e[FPrice].Int())*0.908)), ts(e[FDateTime].Time())))
			}
		}
		return out
	},
	"nexmark-q2": func(evs [][]core.Value) []string {
		var out []string
		for _, e := range evs {
			if e[FKind].Int() == Bid && e[FAuction].Int()%123 == 0 {
				out = append(out, fmt.Sprintf("%d,%d", e[FAuction].Int(), e[FPrice].Int()))
			}
		}
		return out
	},
	"nexmark-q5": func(evs [][]core.Value) []string {
		type wk struct{ end, auction int64 }
		counts := map[wk]int64{}
		for _, e := range evs {
			if e[FKind].Int() != Bid {
				continue
			}
			last := e[FDateTime].Time() / Q5Slide * Q5Slide
			for start := last - Q5Size + Q5Slide; start <= last; start += Q5Slide {
				counts[wk{start + Q5Size, e[FAuction].Int()}]++
			}
		}
		best := map[int64]int64{}
		for k, n := range counts {
			best[k.end] = max(best[k.end], n)
		}
		var keys []wk
		for k, n := range counts {
			if n == best[k.end] {
				keys = append(keys, k)
			}
		}
		sort.Slice(keys, func(i, j int) bool {
			return keys[i].end < keys[j].end || keys[i].end == keys[j].end && keys[i].auction < keys[j].auction
		})
		out := make([]string, len(keys))
		for i, k := range keys {
			out[i] = fmt.Sprintf("%s,%s,%d,%d", ts(k.end-Q5Size), ts(k.end), k.auction, counts[k])
		}
		return out
	},
	"nexmark-q7": func(evs [][]core.Value) []string {
		best := map[int64]int64{}
		for _, e := range evs {
			if e[FKind].Int() == Bid {
				end := e[FDateTime].Time()/Q7Size*Q7Size + Q7Size
				if p, ok := best[end]; !ok || e[FPrice].Int() > p {
					best[end] = e[FPrice].Int()
				}
			}
		}
		type row struct{ end, t, auction, bidder int64 }
		var rows []row
		for _, e := range evs {
			if e[FKind].Int() == Bid {
				end := e[FDateTime].Time()/Q7Size*Q7Size + Q7Size
				if e[FPrice].Int() == best[end] {
					rows = append(rows, row{end, e[FDateTime].Time(), e[FAuction].Int(), e[FBidder].Int()})
				}
			}
		}
		slices.SortFunc(rows, func(a, b row) int {
			if a.end != b.end {
				return cmp.Compare(a.end, b.end)
			}
			if a.t != b.t {
				return cmp.Compare(a.t, b.t)
			}
			if a.auction != b.auction {
				return cmp.Compare(a.auction, b.auction)
			}
			return cmp.Compare(a.bidder, b.bidder)
		})
		out := make([]string, len(rows))
		for i, r := range rows {
			out[i] = fmt.Sprintf("%s,%s,%d,%d,%d,%s", ts(r.end-Q7Size), ts(r.end), r.auction, r.bidder, best[r.end], ts(r.t))
		}
		return out
	},
	"nexmark-q8": func(evs [][]core.Value) []string {
		type wk struct{ end, id int64 }
		persons := map[wk]string{}
		sellers := map[wk]bool{}
		for _, e := range evs {
			end := e[FDateTime].Time()/Q8Size*Q8Size + Q8Size
			switch e[FKind].Int() {
			case Person:
				persons[wk{end, e[FID].Int()}] = e[FName].Str()
			case Auction:
				sellers[wk{end, e[FSeller].Int()}] = true
			}
		}
		var keys []wk
		for k := range persons {
			if sellers[k] {
				keys = append(keys, k)
			}
		}
		sort.Slice(keys, func(i, j int) bool {
			return keys[i].end < keys[j].end || keys[i].end == keys[j].end && keys[i].id < keys[j].id
		})
		out := make([]string, len(keys))
		for i, k := range keys {
			out[i] = fmt.Sprintf("%s,%s,%d,%s", ts(k.end-Q8Size), ts(k.end), k.id, persons[k])
		}
		return out
	},
}

// Every query's output equals a direct computation over the same events,
// record for record and in order; regional queries give the same output
// with 1 to 4 channels and the single source stage or 1, 2, 3 or 8 source
// workers reading the generator's blocks.
func TestQueriesMatchBruteForce(t *testing.T) {
	cfg := testConfig(7)
	evs := events(t, cfg)
	for _, q := range Queries {
		t.Run(q.Name, func(t *testing.T) {
			want := brute[q.Name](evs)
			if len(want) == 0 {
				t.Fatalf("brute force gives no output: the test proves nothing")
			}
			runs := [][2]int{{1, -1}} // channels, source workers (-1: one source stage)
			if q.Regional {
				runs = append(runs, [2]int{4, -1}, [2]int{1, 1}, [2]int{3, 2}, [2]int{4, 3}, [2]int{2, 8})
			}
			for _, c := range runs {
				got := runQueryWith(t, q, cfg, c[0], c[1])
				if !slices.Equal(got, want) {
					t.Fatalf("%d channels, %d source workers: %d records, want %d; %s", c[0], c[1], len(got), len(want), firstDiff(got, want))
				}
			}
			t.Logf("%d records", len(want))
		})
	}
}

func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("first difference at %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
	return "one is a prefix of the other"
}

// The generator gives persons, auctions and bids 1:3:46, event time
// advancing by the inter-event delay, and the same events for the same
// seed (different ones for another), whatever the batch boundaries.
func TestGenerator(t *testing.T) {
	cfg := testConfig(1)
	evs := events(t, cfg)
	var kinds [3]int
	for n, e := range evs {
		kinds[e[FKind].Int()]++
		if got, want := e[FDateTime].Time(), DefaultBaseTime+int64(n)*cfg.InterEventDelay; got != want {
			t.Fatalf("event %d: date_time %d, want %d", n, got, want)
		}
	}
	if kinds != [3]int{400, 1200, 18400} {
		t.Fatalf("persons, auctions, bids = %v, want 1:3:46 of 20000", kinds)
	}
	// Through Next: same events as Event.
	g, _ := NewGenerator(cfg)
	n := 0
	for {
		b, err := g.Next(context.Background())
		if err != nil {
			break
		}
		for i := 0; i < b.Len; i++ {
			if !slices.Equal(b.Row(i), evs[n]) || b.Pos[i] != int64(n+1) {
				t.Fatalf("event %d differs through Next", n)
			}
			n++
		}
		b.Release()
	}
	if n != len(evs) {
		t.Fatalf("Next gave %d events, want %d", n, len(evs))
	}
	other := events(t, testConfig(2))
	same := 0
	for i := range evs {
		if slices.Equal(evs[i], other[i]) {
			same++
		}
	}
	if same > len(evs)/10 {
		t.Fatalf("seeds 1 and 2 share %d of %d events", same, len(evs))
	}
	// Hot auctions: with ratio 2, about half the bids go to an auction
	// whose base-0 id is a multiple of 100.
	hot, bids := 0, 0
	for _, e := range evs {
		if e[FKind].Int() == Bid {
			bids++
			if (e[FAuction].Int()-FirstAuctionID)%100 == 0 {
				hot++
			}
		}
	}
	if f := float64(hot) / float64(bids); f < 0.45 || f > 0.6 {
		t.Fatalf("%.2f of bids on hot auctions, want about 0.5", f)
	}
	// Ids referenced exist or run at most the lead ahead.
	for n, e := range evs {
		switch e[FKind].Int() {
		case Bid:
			if a := e[FAuction].Int(); a > FirstAuctionID+int64(n)*3/50+auctionLead+3 {
				t.Fatalf("event %d: bid on auction %d, too far ahead", n, a)
			}
		case Person:
			if !strings.Contains(e[FName].Str(), " ") || e[FCity].Str() == "" || e[FState].Str() == "" {
				t.Fatalf("event %d: person %s", n, render(Schema, e))
			}
		}
	}
}

// With a rate, Next paces events and stamps batches with their intended
// send time.
func TestGeneratorRate(t *testing.T) {
	g, _ := NewGenerator(Config{Seed: 1, Count: 2000, Rate: 100_000})
	n := 0
	for {
		b, err := g.Next(context.Background())
		if err != nil {
			break
		}
		if b.Stamp == 0 {
			t.Fatal("paced batch without a stamp")
		}
		n += b.Len
		b.Release()
	}
	if n != 2000 {
		t.Fatalf("%d events, want 2000", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.Next(ctx); err == nil {
		t.Fatal("Next ignores a done context")
	}
}

// MaxPerWindow keeps every record tied at the maximum, in arrival order,
// and releases a window on the next window's first record, on a watermark
// past its end, or at the end.
func TestMaxPerWindowTies(t *testing.T) {
	in := core.MustSchema(core.Field{Name: "window_end", Type: core.Timestamp}, core.Field{Name: "k", Type: core.Int64},
		core.Field{Name: "n", Type: core.Int64})
	def, err := MaxPerWindow("m", "window_end", "n", in)
	if err != nil {
		t.Fatal(err)
	}
	op, _ := def.New(core.Env{})
	c := &collect{s: in}
	out := core.NewEmitter(in, func(b *core.Batch) error { defer b.Release(); return c.Write(b) }, nil)
	feed := func(rows ...[3]int64) {
		b := core.NewBatch(in)
		for _, r := range rows {
			v := b.Append(1, 0, 0, 0)
			v[0], v[1], v[2] = core.TimeValue(r[0]), core.IntValue(r[1]), core.IntValue(r[2])
		}
		if err := op.Process(b, out); err != nil {
			t.Fatal(err)
		}
		b.Release()
	}
	feed([3]int64{10, 1, 3}, [3]int64{10, 2, 5}, [3]int64{10, 3, 5}, [3]int64{10, 4, 1})
	feed([3]int64{20, 1, 2}, [3]int64{20, 2, 2})
	if err := op.Watermark(18, 2, out); err != nil { // window 20 not complete
		t.Fatal(err)
	}
	out.Flush()
	if want := []string{ts(10) + ",2,5", ts(10) + ",3,5"}; !slices.Equal(c.lines, want) {
		t.Fatalf("after window 20 started: %q, want %q", c.lines, want)
	}
	op.Watermark(19, 3, out)
	feed([3]int64{30, 7, 9})
	op.Finish(4, out)
	out.Flush()
	want := []string{ts(10) + ",2,5", ts(10) + ",3,5", ts(20) + ",1,2", ts(20) + ",2,2", ts(30) + ",7,9"}
	if !slices.Equal(c.lines, want) {
		t.Fatalf("got %q, want %q", c.lines, want)
	}
}

// The keyed queries (q5: core/window; q8: NewUsers with its Migrator)
// give the same output when the channel count changes while they run.
func TestKeyedQueriesRescaled(t *testing.T) {
	cfg := testConfig(11)
	evs := events(t, cfg)
	for _, q := range Queries {
		if q.Name != "nexmark-q5" && q.Name != "nexmark-q8" {
			continue
		}
		g, _ := NewGenerator(cfg)
		sink := &collect{}
		job, err := q.Build(g, 2, sink)
		if err != nil {
			t.Fatal(err)
		}
		job.RingSize = 8
		job.Region.MaxChannels = 4
		job.Region.Schedule = func(batch int64) int { return 1 + int(batch*7%4) }
		rep, err := runtime.Run(context.Background(), job)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Rescales == 0 {
			t.Fatalf("%s: no rescale happened", q.Name)
		}
		if want := brute[q.Name](evs); !slices.Equal(sink.lines, want) {
			t.Fatalf("%s with %d rescales: %d records, want %d; %s", q.Name, rep.Rescales, len(sink.lines), len(want), firstDiff(sink.lines, want))
		}
		if q.Name == "nexmark-q5" {
			// The hottest auctions are found in two phases: a partial max
			// per window in every channel, the final one after the merge.
			var partial, final runtime.OperatorReport
			for _, o := range rep.Operators {
				switch o.Name {
				case "hottest (partial)":
					partial = o
				case "hottest":
					final = o
				}
			}
			t.Logf("q5: partial in %d out %d, final in %d out %d", partial.In, partial.Out, final.In, final.Out)
			if partial.Stage != "region" || partial.Out == 0 || partial.Out >= partial.In/10 || final.In != partial.Out || final.Out != int64(len(sink.lines)) {
				t.Fatalf("q5: partial %+v, final %+v, %d lines", partial, final, len(sink.lines))
			}
		}
	}
}

// Every query is registered as a perf workload whose job runs.
func TestWorkloadsRegistered(t *testing.T) {
	for _, q := range Queries {
		w, err := perf.Lookup(q.Name)
		if err != nil {
			t.Fatal(err)
		}
		job, err := w.Build(perf.Options{Count: 5000, Seed: 3, Channels: 2})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := runtime.Run(context.Background(), job)
		if err != nil {
			t.Fatalf("%s: %v", q.Name, err)
		}
		if rep.RecordsIn != 5000 {
			t.Fatalf("%s: %d records in, want 5000", q.Name, rep.RecordsIn)
		}
	}
}

// Blocks read concurrently by several workers, joined in block order, are
// Next's batches; a paced generator is not read by blocks, an unbounded
// one has no last block.
func TestGeneratorBlocks(t *testing.T) {
	cfg := Config{Seed: 3, Count: 3*BlockEvents + 777}
	seq, _ := NewGenerator(cfg)
	var want []string
	for {
		b, err := seq.Next(context.Background())
		if err != nil {
			break
		}
		want = append(want, fmt.Sprint(b.Pos, b.Vals))
		b.Release()
	}
	for _, m := range []int{1, 2, 3, 8} {
		g, _ := NewGenerator(cfg)
		per := make([][]string, g.Blocks())
		var wg sync.WaitGroup
		for w := range m {
			wg.Go(func() {
				for b := w; b < g.Blocks(); b += m {
					err := g.ReadBlock(context.Background(), b, nil, func(bt *core.Batch) error {
						per[b] = append(per[b], fmt.Sprint(bt.Pos, bt.Vals))
						bt.Release()
						return nil
					})
					if err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		if got := slices.Concat(per...); g.Blocks() != 4 || !slices.Equal(got, want) {
			t.Fatalf("%d workers, %d blocks: %d batches, want %d", m, g.Blocks(), len(got), len(want))
		}
	}
	paced, _ := NewGenerator(Config{Count: 100, Rate: 1000})
	unbounded, _ := NewGenerator(Config{})
	if paced.Blocks() != 0 || unbounded.Blocks() != -1 {
		t.Fatalf("paced %d blocks, unbounded %d", paced.Blocks(), unbounded.Blocks())
	}
}
