package runtime

import (
	"context"
	"fmt"
	goruntime "runtime"
	"slices"
	"sync"
	"testing"

	"streamd/core"
	"streamd/core/source"
	"streamd/ring"
)

// blockScript is the input of an exchange test: per block, its source
// batches (> 0: that many records, then the watermark candidate; 0: a
// barrier between two batches).
type blockScript [][]int

// nBlocks is a core.Splittable of blocks blocks for blockInput's count;
// nothing reads it.
type nBlocks struct {
	core.Source
	blocks int
}

func (s nBlocks) Blocks() int { return s.blocks }
func (s nBlocks) ReadBlock(context.Context, int, *core.ErrorPolicy, func(*core.Batch) error) error {
	return nil
}

// workerSplitter is a source worker's splitter over n new rings of size
// ringSize, keyed over 4096 groups, added to cfg (its rings, and its
// gathering slots when gather is set, with a linger that never comes).
func workerSplitter(t *testing.T, cfg *routing, n, ringSize int, gather bool) *splitter {
	t.Helper()
	rings := make([]*ring.SPSC[*core.Batch], n)
	for c := range rings {
		rings[c], _ = ring.New[*core.Batch](ringSize)
	}
	sp, err := newSplitter(rings, source.GeneratorSchema, &Region{Channels: n, Key: []string{"key"}, Groups: 4096}, n)
	if err != nil {
		t.Fatal(err)
	}
	sp.cpu = &stageCPU{}
	if gather {
		sp.gatherOn(DefaultBatchLinger, func() int64 { return 0 })
		sp.flat = true
		cfg.held = append(cfg.held, sp.gather)
	}
	cfg.rings = append(cfg.rings, rings)
	return sp
}

// runExchange runs script through m source workers (block b by worker
// b mod m, each with its own splitter, gathering when gather is set, with
// a linger that never comes: only full batches, markers, block ends and
// the channels' takes send) over rings of ringSize into n channels
// reading with blockInput, all on goroutines of their own that yield at
// random, and returns each channel's events ("r<seq>" per record,
// "<kind><seq>" per marker, "@<wm>" for a watermark) and the ring slots
// each channel's rings took in all.
func runExchange(t *testing.T, script blockScript, m, n, ringSize int, gather bool, seed uint64) (events [][]string, slots []uint64) {
	t.Helper()
	x := &exchange{src: nBlocks{blocks: len(script)}}
	cfg := &routing{}
	sps := make([]*splitter, m)
	for w := range m {
		sp := workerSplitter(t, cfg, n, ringSize, gather)
		cfg.ids, sps[w] = append(cfg.ids, w), sp
	}
	cfg.table = sps[0].table
	x.configs = []*routing{cfg}
	x.routes.Store(&x.configs)
	x.started.Store(-1)
	var startMu sync.Mutex
	var wg sync.WaitGroup
	fail := func(err error) {
		t.Error(err)
		for _, sp := range sps {
			for _, rg := range sp.rings {
				rg.Cancel()
			}
		}
	}
	for w, sp := range sps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := seed*31 + uint64(w)
			yield := func() {
				if rnd = rnd*6364136223846793005 + 1442695040888963407; rnd>>62 == 0 {
					goruntime.Gosched()
				}
			}
			for b := w; b < len(script); b += m {
				startMu.Lock()
				if int64(b) > x.started.Load() {
					x.started.Store(int64(b))
				}
				startMu.Unlock()
				sp.seq = uint64(b) << blockSeqBits
				for i, k := range script[b] {
					if k == 0 {
						if err := sp.route(core.NewMarker(core.Barrier)); err != nil {
							fail(err)
							return
						}
						continue
					}
					bt := core.NewBatch(source.GeneratorSchema)
					for j := range k {
						pos := int64(b)<<20 + int64(i)<<10 + int64(j)
						row := bt.Append(0, 0, pos, pos)
						row[0], row[1], row[2], row[3] = core.IntValue(pos), core.StringValue(fmt.Sprintf("k%d", pos%11)), core.IntValue(1), core.TimeValue(pos)
					}
					mk := core.NewMarker(core.Watermark)
					mk.Watermark = int64(b*1000 + i)
					if err := sp.route(bt); err != nil {
						fail(err)
						return
					}
					if err := sp.route(mk); err != nil {
						fail(err)
						return
					}
					if sp.gather != nil {
						if err := sp.settle(); err != nil {
							fail(err)
							return
						}
					}
					yield()
				}
				for c := range n {
					mk := core.NewMarker(core.Pulse)
					mk.Control, mk.MarkSeq = blockEnd, sp.seq
					if err := sp.push(c, mk); err != nil {
						fail(err)
						return
					}
				}
			}
			for _, rg := range sp.rings {
				rg.Close()
			}
		}()
	}
	events = make([][]string, n)
	for c := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := newBlockInput(x, c, 0, 0, core.NoTime, t.Context())
			sc := &stageCPU{}
			rnd := seed*17 + uint64(c)
			for {
				bt, err := in.pop(sc)
				if err != nil {
					fail(fmt.Errorf("channel %d: %w", c, err))
					return
				}
				if len(bt.Marks) > 0 {
					fail(fmt.Errorf("channel %d: a piece with marks", c))
					return
				}
				if bt.Kind == core.Data {
					for j := range bt.Len {
						events[c] = append(events[c], fmt.Sprintf("r%d", bt.Seq[j]))
					}
				} else {
					e := fmt.Sprintf("%s%d", bt.Kind, bt.MarkSeq)
					if bt.Kind == core.Watermark {
						e += fmt.Sprintf("@%d", bt.Watermark)
					}
					events[c] = append(events[c], e)
				}
				end := bt.Kind == core.End
				bt.Release()
				if end {
					return
				}
				if rnd = rnd*6364136223846793005 + 1442695040888963407; rnd>>62 == 0 {
					goruntime.Gosched()
				}
			}
		}()
	}
	wg.Wait()
	slots = make([]uint64, n)
	for _, sp := range sps {
		for c, rg := range sp.rings {
			slots[c] += rg.Pushed()
		}
	}
	return events, slots
}

// Source workers gather per channel (batching.go) without changing what a
// channel sees: 1–2 workers and 1–3 channels, each on a goroutine of its
// own yielding at random over rings of 4 slots, so that channels take
// gathered batches from the slots while their workers push and move on to
// later blocks — a batch taken may belong to the worker's next block,
// while the channel still reads other workers' blocks — give every channel
// the records, watermarks, pulses and barriers, in the order, that the
// same run without gathering gives it, and take no more ring slots.
func TestExchangeGatherConcurrentOrder(t *testing.T) {
	rounds := 24
	if testing.Short() {
		rounds = 6
	}
	for round := range rounds {
		m, n := 1+round%2, 1+round%3
		rnd := uint64(round*7919 + 3)
		draw := func(k int) int {
			rnd = rnd*6364136223846793005 + 1442695040888963407
			return int(rnd>>33) % k
		}
		script := make(blockScript, 6+draw(6))
		for b := range script {
			for range 1 + draw(8) {
				if draw(8) == 0 {
					script[b] = append(script[b], 0)
				} else {
					script[b] = append(script[b], 1+draw(200))
				}
			}
		}
		want, off := runExchange(t, script, m, n, 1024, false, uint64(round))
		got, on := runExchange(t, script, m, n, 4, true, uint64(round))
		for c := range n {
			if !slices.Equal(got[c], want[c]) {
				i := firstDiff(got[c], want[c])
				t.Fatalf("round %d, %d workers, %d channels: channel %d saw %d events gathered, %d not; first difference at %d: %v vs %v",
					round, m, n, c, len(got[c]), len(want[c]), i, got[c][i:min(i+5, len(got[c]))], want[c][i:min(i+5, len(want[c]))])
			}
			if on[c] > off[c] {
				t.Fatalf("round %d: channel %d took %d ring slots gathered, %d not", round, c, on[c], off[c])
			}
		}
	}
}

// A channel finds the ring it reads block 0 from empty and, before it
// takes the slot beside it, block 0's worker ends the block and gathers
// for its next block (2, with 2 workers): the batch the channel takes is
// block 2's. It must come after block 0's rest and after block 1 (from the
// other worker's ring), when the channel reads that ring again: the
// events are those of the same input without gathering.
func TestExchangeStealFromNextBlock(t *testing.T) {
	type step func(sps []*splitter)
	data := func(w, b, i, k int) step {
		return func(sps []*splitter) {
			sp := sps[w]
			bt := core.NewBatch(source.GeneratorSchema)
			for j := range k {
				pos := int64(b)<<20 + int64(i)<<10 + int64(j)
				row := bt.Append(0, 0, pos, pos)
				row[0], row[1], row[2], row[3] = core.IntValue(pos), core.StringValue(fmt.Sprintf("k%d", j)), core.IntValue(1), core.TimeValue(pos)
			}
			mk := core.NewMarker(core.Watermark)
			mk.Watermark = int64(b*1000 + i)
			if err := sp.route(bt); err != nil {
				t.Fatal(err)
			}
			if err := sp.route(mk); err != nil {
				t.Fatal(err)
			}
			if sp.gather != nil {
				if err := sp.settle(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	begin := func(w, b int) step {
		return func(sps []*splitter) { sps[w].seq = uint64(b) << blockSeqBits }
	}
	end := func(w int) step {
		return func(sps []*splitter) {
			mk := core.NewMarker(core.Pulse)
			mk.Control, mk.MarkSeq = blockEnd, sps[w].seq
			if err := sps[w].push(0, mk); err != nil {
				t.Fatal(err)
			}
		}
	}
	barrier := func(w int) step {
		return func(sps []*splitter) {
			if err := sps[w].route(core.NewMarker(core.Barrier)); err != nil {
				t.Fatal(err)
			}
		}
	}
	run := func(gather bool) []string {
		x := &exchange{src: nBlocks{blocks: 3}}
		cfg := &routing{ids: []int{0, 1}}
		sps := make([]*splitter, 2)
		for w := range sps {
			sps[w] = workerSplitter(t, cfg, 1, 16, gather)
		}
		x.configs = []*routing{cfg}
		x.routes.Store(&x.configs)
		x.started.Store(2)
		do := func(steps ...step) {
			for _, s := range steps {
				s(sps)
			}
		}
		// Block 0 is being read: a batch is gathered for the channel.
		do(begin(0, 0), data(0, 0, 0, 5))
		// Meanwhile: block 0 ends, block 2 starts (worker 0), block 1 is
		// read whole (worker 1), a barrier inside it.
		meanwhile := []step{end(0), begin(0, 2), data(0, 2, 0, 3), begin(1, 1), data(1, 1, 0, 4), barrier(1), data(1, 1, 1, 2), end(1)}
		in := newBlockInput(x, 0, 0, 0, core.NoTime, t.Context())
		if gather {
			in.ri = &ringInput{rg: cfg.rings[0][0], held: cfg.held[0][0]}
			in.ris[in.ri.rg] = in.ri
			in.cur = in.ri.rg
			in.ri.beforeTake = func() {
				in.ri.beforeTake = nil
				do(meanwhile...)
			}
		} else {
			do(meanwhile...)
		}
		var events []string
		for {
			bt, err := in.pop(&stageCPU{})
			if err != nil {
				t.Fatal(err)
			}
			if len(events) == 0 {
				do(end(0)) // block 2 ends after the channel took its batch
			}
			if bt.Kind == core.Data {
				for j := range bt.Len {
					events = append(events, fmt.Sprintf("r%d", bt.Seq[j]))
				}
			} else {
				events = append(events, fmt.Sprintf("%s%d@%d", bt.Kind, bt.MarkSeq, bt.Watermark))
			}
			kind := bt.Kind
			bt.Release()
			if kind == core.End {
				return events
			}
		}
	}
	want, got := run(false), run(true)
	if !slices.Equal(got, want) {
		t.Fatalf("gathered: %v\nwant:     %v", got, want)
	}
}
