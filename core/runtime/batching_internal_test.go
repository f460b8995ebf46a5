package runtime

import (
	"fmt"
	goruntime "runtime"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"streamd/core"
	"streamd/core/source"
	"streamd/ring"
)

// rig is a splitter and its channels' inputs, driven by hand on the test's
// goroutine (producer and consumer both: no channel runs), with a scripted
// clock for the linger.
type rig struct {
	sp    *splitter
	ins   []*ringInput
	clock int64 // ns
	pos   int64 // the next record's input position
}

// newRig makes a splitter over n rings of ringSize slots, keyed by the
// generator's key (or round-robin when !keyed), gathering with linger
// (0: off).
func newRig(t testing.TB, n, ringSize int, keyed bool, linger time.Duration) *rig {
	t.Helper()
	rings := make([]*ring.SPSC[*core.Batch], n)
	for c := range rings {
		rings[c], _ = ring.New[*core.Batch](ringSize)
	}
	reg := &Region{Channels: n, Groups: 4096}
	if keyed {
		reg.Key = []string{"key"}
	}
	sp, err := newSplitter(rings, source.GeneratorSchema, reg, n)
	if err != nil {
		t.Fatal(err)
	}
	sp.cpu = &stageCPU{}
	g := &rig{sp: sp}
	if linger > 0 {
		sp.gatherOn(linger, func() int64 { return g.clock })
	}
	for c := range n {
		g.ins = append(g.ins, sp.input(c))
	}
	return g
}

// data routes a source batch of k records (keys k0 … k6 in turn).
func (g *rig) data(t testing.TB, k int) {
	t.Helper()
	b := core.NewBatch(source.GeneratorSchema)
	for range k {
		g.pos++
		row := b.Append(0, 0, g.pos, g.pos)
		row[0], row[1], row[2], row[3] = core.IntValue(g.pos), core.StringValue(fmt.Sprintf("k%d", g.pos%7)), core.IntValue(1), core.TimeValue(g.pos)
	}
	if err := g.sp.route(b); err != nil {
		t.Fatal(err)
	}
}

// marker routes a marker of kind k (a watermark at w).
func (g *rig) marker(t testing.TB, k core.Kind, w int64) {
	t.Helper()
	m := core.NewMarker(k)
	m.Watermark, m.Epoch = w, uint64(w)
	if err := g.sp.route(m); err != nil {
		t.Fatal(err)
	}
}

func (g *rig) settle(t testing.TB) {
	t.Helper()
	if g.sp.gather != nil {
		if err := g.sp.settle(); err != nil {
			t.Fatal(err)
		}
	}
}

// ready says whether channel c's pop would return at once.
func (g *rig) ready(c int) bool {
	in := g.ins[c]
	return in.i < len(in.q) || in.rg.Len() > 0 || (in.held != nil && in.held.slot.Load() != nil)
}

// take pops what channel c can have now, at most most pieces, as events:
// "r<seq>" per record, "<kind><seq>" per marker (with "@<wm>" for a
// watermark). pieces counts the batches popped.
func (g *rig) take(t testing.TB, c, most int, events *[]string, pieces *int) {
	t.Helper()
	for ; most > 0 && g.ready(c); most-- {
		b, err := g.ins[c].pop(&stageCPU{})
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Marks) > 0 {
			t.Fatal("a piece with marks reached the channel")
		}
		*pieces++
		if b.Kind == core.Data {
			if b.Len == 0 {
				t.Fatal("an empty data piece")
			}
			for i := range b.Len {
				*events = append(*events, fmt.Sprintf("r%d", b.Seq[i]))
			}
		} else {
			e := fmt.Sprintf("%s%d", b.Kind, b.MarkSeq)
			if b.Kind == core.Watermark {
				e += fmt.Sprintf("@%d", b.Watermark)
			}
			*events = append(*events, e)
		}
		b.Release()
	}
}

// Adaptive batching changes what crosses the ring, never what a channel
// sees: for any script of source batches (1 to 600 records), watermarks,
// pulses (channels idle for 4 batches), barriers, consumers taking some of
// their input, the end of source iterations and the clock, every channel
// pops the same records and markers in the same order with batching on as
// off, for 1 to 3 channels, keyed or round-robin; and each channel pops as
// many pieces as the splitter counted for it (what a drain waits for).
func TestGatherSameSequence(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 3).Draw(rt, "channels")
		keyed := rapid.Bool().Draw(rt, "keyed")
		on := newRig(t, n, 1024, keyed, time.Millisecond)
		off := newRig(t, n, 1024, keyed, 0)
		evOn, evOff := make([][]string, n), make([][]string, n)
		pcOn, pcOff := make([]int, n), make([]int, n)
		wm := int64(0)
		steps := rapid.IntRange(1, 120).Draw(rt, "steps")
		for range steps {
			switch rapid.IntRange(0, 9).Draw(rt, "op") {
			case 0, 1, 2, 3:
				k := rapid.IntRange(1, 600).Draw(rt, "records")
				on.data(t, k)
				off.data(t, k)
			case 4, 5:
				wm += int64(rapid.IntRange(1, 100).Draw(rt, "wm step"))
				on.marker(t, core.Watermark, wm)
				off.marker(t, core.Watermark, wm)
			case 6:
				on.marker(t, core.Barrier, wm)
				off.marker(t, core.Barrier, wm)
			case 7:
				on.settle(t)
			case 8:
				on.clock += int64(rapid.IntRange(0, 2e6).Draw(rt, "advance"))
			case 9:
				c := rapid.IntRange(0, n-1).Draw(rt, "consumer")
				k := rapid.IntRange(1, 8).Draw(rt, "pops")
				on.take(t, c, k, &evOn[c], &pcOn[c])
			}
		}
		on.marker(t, core.End, 0)
		off.marker(t, core.End, 0)
		for c := range n {
			on.take(t, c, 1<<30, &evOn[c], &pcOn[c])
			off.take(t, c, 1<<30, &evOff[c], &pcOff[c])
			if !slices.Equal(evOn[c], evOff[c]) {
				rt.Fatalf("channel %d: batching on saw %d events, off %d; first difference at %d: %v vs %v", c, len(evOn[c]), len(evOff[c]), firstDiff(evOn[c], evOff[c]), evOn[c], evOff[c])
			}
			if uint64(pcOn[c]) != on.sp.pushed[c] || uint64(pcOff[c]) != off.sp.pushed[c] {
				rt.Fatalf("channel %d: popped %d/%d pieces, splitter counted %d/%d (on/off)", c, pcOn[c], pcOff[c], on.sp.pushed[c], off.sp.pushed[c])
			}
			if on.sp.rings[c].Pushed() > off.sp.rings[c].Pushed() {
				rt.Fatalf("channel %d: %d ring slots with batching, %d without", c, on.sp.rings[c].Pushed(), off.sp.rings[c].Pushed())
			}
		}
	})
}

// The splitter and a channel on two goroutines: the channel takes
// gathered batches from the slot whenever its ring is empty, while the
// splitter keeps pushing (a ring of 4, yields at random on both sides), and
// still sees exactly the events a single-threaded run without batching
// gives each channel. Catches a stolen batch overtaking batches the
// splitter pushed between the channel's empty ring and its take.
func TestGatherConcurrentOrder(t *testing.T) {
	rounds := 30
	if testing.Short() {
		rounds = 5
	}
	for round := range rounds {
		n := 1 + round%3
		script := make([]int, 400) // > 0: a source batch of that many records; 0: a watermark
		rnd := uint64(round*7919 + 1)
		for i := range script {
			rnd = rnd*6364136223846793005 + 1442695040888963407
			if rnd>>61 == 0 {
				script[i] = 0
			} else {
				script[i] = 1 + int(rnd>>33)%40
			}
		}
		drive := func(g *rig, yield func()) {
			wm := int64(0)
			for _, k := range script {
				g.settle(t)
				if k == 0 {
					wm++
					g.marker(t, core.Watermark, wm)
				} else {
					g.data(t, k)
				}
				yield()
			}
			g.marker(t, core.End, 0)
		}
		ref := newRig(t, n, 4096, true, 0)
		drive(ref, func() {})
		want := make([][]string, n)
		for c := range n {
			var pieces int
			ref.take(t, c, 1<<30, &want[c], &pieces)
		}

		g := newRig(t, n, 4, true, time.Hour)
		got := make([][]string, n)
		done := make(chan struct{}, n)
		for c := range n {
			go func() {
				defer func() { done <- struct{}{} }()
				sc := &stageCPU{}
				for i := 0; ; i++ {
					b, err := g.ins[c].pop(sc)
					if err != nil {
						return
					}
					if b.Kind == core.Data {
						for j := range b.Len {
							got[c] = append(got[c], fmt.Sprintf("r%d", b.Seq[j]))
						}
					} else {
						e := fmt.Sprintf("%s%d", b.Kind, b.MarkSeq)
						if b.Kind == core.Watermark {
							e += fmt.Sprintf("@%d", b.Watermark)
						}
						got[c] = append(got[c], e)
					}
					end := b.Kind == core.End
					b.Release()
					if end {
						return
					}
					if i%3 == 0 {
						goruntime.Gosched()
					}
				}
			}()
		}
		k := 0
		drive(g, func() {
			if k++; k%5 == 0 {
				goruntime.Gosched()
			}
		})
		for range n {
			<-done
		}
		for c := range n {
			if !slices.Equal(got[c], want[c]) {
				i := firstDiff(got[c], want[c])
				t.Fatalf("round %d, channel %d: %d events, want %d; first difference at %d: %v vs %v", round, c, len(got[c]), len(want[c]), i,
					got[c][max(0, i-2):min(len(got[c]), i+3)], want[c][max(0, i-2):min(len(want[c]), i+3)])
			}
		}
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// The flush rules, one at a time, on one channel with a scripted clock.
func TestGatherFlushRules(t *testing.T) {
	const linger = time.Millisecond
	g := newRig(t, 1, 64, true, linger)
	rg := g.sp.rings[0]
	held := func() int {
		if p := g.sp.gather[0].slot.Load(); p != nil {
			return p.Len
		}
		return -1
	}
	var ev []string
	var pieces int

	// The channel waits (ring drained): a source iteration's batch and
	// watermark go at its end, as one slot.
	g.data(t, 10)
	g.marker(t, core.Watermark, 1)
	if rg.Len() != 0 || held() != 10 {
		t.Fatalf("before the end of the iteration: ring %d, held %d", rg.Len(), held())
	}
	g.settle(t)
	if rg.Len() != 1 || held() != -1 {
		t.Fatalf("channel waiting: ring %d, held %d; want 1, none", rg.Len(), held())
	}

	// The channel is busy (the slot is still in the ring): 50 iterations
	// of 10 records and a watermark gather in one batch while the clock
	// stands still; the 51st overflows 512 records and sends them.
	for i := range 50 {
		g.data(t, 10)
		g.marker(t, core.Watermark, int64(2+i))
		g.settle(t)
	}
	if rg.Len() != 1 || held() != 500 {
		t.Fatalf("channel busy: ring %d, held %d; want 1, 500", rg.Len(), held())
	}
	g.data(t, 20)
	if rg.Len() != 2 || held() != 20 {
		t.Fatalf("overflow: ring %d, held %d; want 2, 20", rg.Len(), held())
	}

	// Linger: counted from the first end of an iteration that found the
	// channel busy; sent once it has passed, though the channel is busy.
	g.settle(t) // since = 0
	g.clock += int64(linger) - 1
	g.settle(t)
	if rg.Len() != 2 {
		t.Fatalf("before the linger: ring %d", rg.Len())
	}
	g.clock++
	g.settle(t)
	if rg.Len() != 3 || held() != -1 {
		t.Fatalf("at the linger: ring %d, held %d; want 3, none", rg.Len(), held())
	}

	// The channel takes what is gathered itself once its ring is empty
	// (the source may be blocked and never settle).
	g.take(t, 0, 1<<30, &ev, &pieces)
	g.data(t, 7)
	if !g.ready(0) || rg.Len() != 0 {
		t.Fatal("the gathered batch is not ready for the waiting channel")
	}
	before := len(ev)
	g.take(t, 0, 1, &ev, &pieces)
	if len(ev)-before != 7 || held() != -1 {
		t.Fatalf("the channel took %d events from the slot, %d left held", len(ev)-before, held())
	}

	// A barrier (any marker but a watermark or pulse) flushes first.
	g.data(t, 3)
	g.marker(t, core.Barrier, 9)
	if rg.Len() != 2 || held() != -1 {
		t.Fatalf("barrier: ring %d, held %d; want 2 (records, barrier), none", rg.Len(), held())
	}
	g.take(t, 0, 1<<30, &ev, &pieces)

	// A watermark after splitAt records or more: they go as they are, the
	// watermark starts the next batch (the channel copies nothing).
	g.data(t, 1)
	g.settle(t) // drained: sent
	g.data(t, splitAt)
	g.marker(t, core.Watermark, 100)
	if rg.Len() != 2 || held() != 0 {
		t.Fatalf("split: ring %d, held %d; want 2, a marker only", rg.Len(), held())
	}
	g.take(t, 0, 1<<30, &ev, &pieces)

	// A channel that gets markers only: sent at maxMarks of them.
	g.data(t, 1)
	g.settle(t)
	for i := range maxMarks - 1 {
		g.marker(t, core.Watermark, int64(200+i))
	}
	if rg.Len() != 1 {
		t.Fatalf("%d markers: ring %d", maxMarks-1, rg.Len())
	}
	g.marker(t, core.Watermark, 1000)
	if rg.Len() != 2 || held() != -1 {
		t.Fatalf("%d markers: ring %d, held %d; want 2, none", maxMarks, rg.Len(), held())
	}
}

// The congestion index at a low rate, scripted: 100 K records/s as a
// source batch of 10 records and a watermark every 100 µs (the source's
// linger), one channel with a 64-slot ring that is descheduled for 30 ms
// (a loaded 2-core machine). Without batching every batch takes two slots
// and the splitter would block after 3.2 ms, although the channel, once it
// runs, takes the whole backlog in a fraction of that; with batching (1 ms
// linger) a slot holds a millisecond of input and the ring never fills.
// The splitter never blocks here (the test stops at the first push that
// would), so what is asserted is when it would have, not a timing.
func TestGatherLowRateCongestion(t *testing.T) {
	const batches = 300 // 30 ms
	for _, c := range []struct {
		linger  time.Duration
		blockAt int // the first batch whose pushes would not fit, -1: none
	}{{0, 32}, {time.Millisecond, -1}} {
		g := newRig(t, 1, 64, true, c.linger)
		rg := g.sp.rings[0]
		blockAt := -1
		for i := range batches {
			g.settle(t)
			if rg.Cap()-rg.Len() < 2 { // a batch and a watermark may need two slots
				blockAt = i
				break
			}
			g.clock += 100_000
			g.data(t, 10)
			g.marker(t, core.Watermark, int64(i))
		}
		if blockAt != c.blockAt {
			t.Errorf("linger %s: the splitter would block at batch %d, want %d (ring %d slots)", c.linger, blockAt, c.blockAt, rg.Len())
		}
		t.Logf("linger %s: ring holds %d slots after %d batches", c.linger, rg.Len(), batches)
	}
}

// BenchmarkSplitterGather is the splitter and the channel's input at a
// low rate's batch size: per source iteration a 16-record keyed batch, a
// watermark and the end of the iteration; the channel takes its input
// every 32 iterations (busy in between). With batching ("on") each slot
// is a gathered batch of 512 records with 31 watermarks inside, split back
// into 64 pieces by the channel's input; without ("off", the baseline)
// the same 64 pieces take 64 slots. Reported per record (the input
// batch's making included), 0 allocs/op.
func BenchmarkSplitterGather(b *testing.B) {
	b.Run("off", func(b *testing.B) { benchGather(b, 0) })
	b.Run("on", func(b *testing.B) { benchGather(b, time.Hour) })
}

func benchGather(b *testing.B, linger time.Duration) {
	src, err := source.Generator(source.GeneratorOptions{Seed: 1, Count: core.BatchSize})
	if err != nil {
		b.Fatal(err)
	}
	tmpl, err := src.Next(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	g := newRig(b, 1, 128, true, linger)
	in, sc := g.ins[0], &stageCPU{}
	const k = 16
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bt := core.NewBatch(source.GeneratorSchema)
		bt.AppendRange(tmpl, 0, k)
		if err := g.sp.route(bt); err != nil {
			b.Fatal(err)
		}
		m := core.NewMarker(core.Watermark)
		m.Watermark = int64(i)
		if err := g.sp.route(m); err != nil {
			b.Fatal(err)
		}
		if g.sp.gather != nil {
			if err := g.sp.settle(); err != nil {
				b.Fatal(err)
			}
		}
		if i%32 == 31 {
			for g.ready(0) {
				p, err := in.pop(sc)
				if err != nil {
					b.Fatal(err)
				}
				p.Release()
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*k), "ns/record")
}
