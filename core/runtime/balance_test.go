package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"streamd/core"
	"streamd/core/runtime"
	"streamd/core/window"
	"streamd/internal/tier"
	"streamd/kvstate"
	"streamd/snapshot"
)

// The determinism contract under rebalancing: a keyed out-of-order
// sliding-window job with late records dead-lettered, whose key-group
// table changes by many random steps while it runs (Rebalance.RandomEvery:
// a step every few source batches, each moving 1–8 key groups between
// channels), gives the output, late count and dead-letter file of the
// single source stage with no rebalancing, for the single source stage
// and source workers M ∈ {1, 2, 3}, channels N ∈ {2, 3} (each seed the
// whole grid in the long tier; in the fast one two pairs a seed, each M
// once and each N twice). The window holds
// key groups in transit (hold.go): every run has gains held, some passing
// quiet watermarks and others waiting at a later marker.
func TestRebalanceStepsKeepOutput(t *testing.T) {
	recs := outOfOrder(40_000, 300, 7)
	run := func(m, n int, seed uint64) ([]string, *runtime.Report, string) {
		dl := filepath.Join(t.TempDir(), "dead.jsonl")
		job, sink := exchangeJob(t, newBlockSource(recs, 9), m, n, 60e9, 20e9, dl)
		if seed != 0 {
			job.Region.Rebalance = &runtime.Rebalance{RandomEvery: 1 + int(seed%3), Seed: seed}
		}
		return runWithLetters(t, fmt.Sprintf("%d workers, %d channels, seed %d", m, n, seed), job, sink, dl)
	}
	want, wantRep, wantLetters := run(-1, 1, 0)
	if wantRep.Late == 0 || len(want) == 0 || len(wantLetters) == 0 {
		t.Fatalf("reference: %d late, %d lines, %d bytes of dead letters", wantRep.Late, len(want), len(wantLetters))
	}
	seeds := []uint64{1, 2}
	if tier.Long() {
		seeds = []uint64{1, 2, 3, 4, 5, 6}
	}
	fast := map[uint64][][2]int{1: {{-1, 3}, {2, 2}}, 2: {{1, 2}, {3, 3}}} // the fast tier's (M, N) pairs
	for _, seed := range seeds {
		for _, m := range []int{-1, 1, 2, 3} {
			for _, n := range []int{2, 3} {
				if !tier.Long() && !slices.Contains(fast[seed], [2]int{m, n}) {
					continue
				}
				got, rep, letters := run(m, n, seed)
				name := fmt.Sprintf("%d workers, %d channels, seed %d", m, n, seed)
				if rep.Rebalance == nil || rep.Rebalance.Steps < 5 || rep.Rescales != 0 {
					t.Fatalf("%s: rebalance report %+v, %d channel changes", name, rep.Rebalance, rep.Rescales)
				}
				if rep.Rebalance.Holds == 0 {
					t.Fatalf("%s: no gaining channel held its key groups in %d steps", name, rep.Rebalance.Steps)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s: %d lines vs %d: %s", name, len(got), len(want), diffAt(got, want))
				}
				if rep.Late != wantRep.Late || letters != wantLetters {
					t.Fatalf("%s: %d late (want %d), dead letters %d vs %d bytes", name, rep.Late, wantRep.Late, len(letters), len(wantLetters))
				}
			}
		}
	}
}

// Rebalance steps and channel-count changes in one run: the scheduled
// changes resize the rebalanced table, the steps move groups of the
// resized one, and the output stays the single source stage's.
func TestRebalanceWithChannelChanges(t *testing.T) {
	recs := outOfOrder(30_000, 300, 8)
	want, _, wantLetters := func() ([]string, *runtime.Report, string) {
		dl := filepath.Join(t.TempDir(), "dead.jsonl")
		job, sink := exchangeJob(t, newBlockSource(recs, 9), -1, 1, 60e9, 0, dl)
		return runWithLetters(t, "reference", job, sink, dl)
	}()
	for _, m := range []int{-1, 2} {
		dl := filepath.Join(t.TempDir(), "dead.jsonl")
		job, sink := exchangeJob(t, newBlockSource(recs, 9), m, 2, 60e9, 0, dl)
		job.Region.MaxChannels, job.Region.Schedule = 5, randomSchedule(3, 5)
		job.Region.Rebalance = &runtime.Rebalance{RandomEvery: 2, Seed: 4}
		got, rep, letters := runWithLetters(t, fmt.Sprint(m, " workers"), job, sink, dl)
		if rep.Rescales < 2 || rep.Rebalance.Steps < 2 {
			t.Fatalf("%d workers: %d channel changes, %d rebalance steps", m, rep.Rescales, rep.Rebalance.Steps)
		}
		if !slices.Equal(got, want) || letters != wantLetters {
			t.Fatalf("%d workers: %d lines vs %d: %s", m, len(got), len(want), diffAt(got, want))
		}
	}
}

// Exactly-once across a crash in the middle of a multi-step move: random
// rebalance steps every batch, a checkpoint every batch or two, and a
// crash at a random block, three times per seed, each restore with
// another source parallelism and channel count. The checkpoints record
// the rebalanced table (Owners, not jump hashing), a restore at the same
// channel count starts from it, and the committed output is the
// uncrashed run's. Gaining channels hold key groups in transit; a
// barrier waits for their handoff, so no checkpoint sees them held.
func TestRebalanceCrashRestore(t *testing.T) {
	recs := outOfOrder(60_000, 200, 12)
	ref, refSink := exchangeJob(t, newBlockSource(recs, 1), -1, 1, 60e9, 0, "")
	if _, err := runtime.Run(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	want := refSink.lines
	for seed := uint64(1); seed <= tier.Pick[uint64](2, 6); seed++ {
		rnd := rand.New(rand.NewPCG(seed, 77))
		store, err := snapshot.Open(t.TempDir(), 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		sink := &epochMem{}
		var restore *snapshot.Checkpoint
		crashes, rebalanced := 0, 0
		for attempt := 0; ; attempt++ {
			m, n := []int{-1, 1, 2, 3}[rnd.IntN(4)], 2+rnd.IntN(2)
			if restore != nil {
				if _, ok := restore.Meta.Sources["block"]; !ok {
					m = -1 // taken by the single source stage inside a block
				}
			}
			src := newBlockSource(recs, 1)
			var s core.Source = src
			start := 0 // the block a restore resumes at (or inside)
			if restore != nil {
				start = int(restore.Meta.Sources["block"])
				if _, ok := restore.Meta.Sources["block"]; !ok {
					for start+1 < src.Blocks() && src.BlockStart(start+1) <= restore.Meta.Sources["source"] {
						start++
					}
				}
			}
			after := uint64(0)
			if restore != nil {
				after = restore.Meta.ID
			}
			// A crash once a checkpoint newer than the restored one is
			// complete, 10 or more blocks after the start (the first
			// barrier comes at the 5th to 8th source batch or block start).
			if attempt < 3 && start+10 < src.Blocks() {
				s = &crashAfterCheckpoint{crashAnywhere{crashBlocks{blockSource: src, crashAt: start + 10 + rnd.IntN(src.Blocks()-start-10)}}, store, after}
			}
			job, _ := exchangeJob(t, s, m, n, 60e9, 0, "")
			job.Sink = sink
			job.Region.Rebalance = &runtime.Rebalance{RandomEvery: 1, Seed: seed*10 + uint64(attempt)}
			// Barriers after steps have begun (a step at every source batch
			// or block start after one): every checkpoint's table is
			// rebalanced.
			job.Checkpoint = &runtime.Checkpointing{Store: store, EveryBatches: 5 + rnd.IntN(4), Restore: restore}
			rep, err := runtime.Run(context.Background(), job)
			if err == nil {
				if rep.Rebalance.Holds == 0 {
					t.Fatalf("seed %d: no gain held in the last run (%d steps)", seed, rep.Rebalance.Steps)
				}
				break
			}
			if !errors.Is(err, errCrash) {
				t.Fatalf("seed %d attempt %d (%d workers, %d channels): %v", seed, attempt, m, n, err)
			}
			crashes++
			c, _, lerr := store.Latest()
			switch {
			case lerr != nil:
				t.Fatal(lerr)
			default:
				if len(c.Meta.Owners) != c.Meta.KeyGroups || c.Meta.KeyGroups == 0 {
					t.Fatalf("seed %d: checkpoint with %d owners for %d key groups", seed, len(c.Meta.Owners), c.Meta.KeyGroups)
				}
				if !jumpTable(c.Meta.Owners, c.Meta.Channels) {
					rebalanced++
				}
				restore = c
			}
		}
		if got := sink.lines(); !slices.Equal(got, want) {
			t.Fatalf("seed %d after %d crashes: %d lines vs %d: %s", seed, crashes, len(got), len(want), diffAt(got, want))
		}
		if crashes < 3 || rebalanced < 3 {
			t.Fatalf("seed %d: %d crashes, %d restores from a rebalanced table", seed, crashes, rebalanced)
		}
	}
}

// jumpTable says whether owners is jump hashing's table for channels.
func jumpTable(owners []int, channels int) bool {
	return slices.Equal(owners, kvstateNewTableOwners(len(owners), channels))
}

func kvstateNewTableOwners(groups, channels int) []int {
	return kvstate.NewTable(groups, channels).Owners()
}

// crashAnywhere is crashBlocks for the single source stage too: Next
// fails where block crashAt starts.
type crashAnywhere struct{ crashBlocks }

func (c *crashAnywhere) Next(ctx context.Context) (*core.Batch, error) {
	if c.next >= c.blocks[c.crashAt] {
		return nil, errCrash
	}
	return c.blockSource.Next(ctx)
}

// A restore starts from the checkpoint's table: after a run whose random
// rebalance steps left an explicit table in its checkpoints, a restore
// without rebalancing at the same channel count checkpoints that very
// table again, and one at another channel count its Resize.
func TestRestoreStartsFromRecordedTable(t *testing.T) {
	recs := outOfOrder(20_000, 200, 13)
	for _, m := range []int{-1, 2} {
		for _, n := range []int{3, 2, 5} {
			store, err := snapshot.Open(t.TempDir(), 10, nil)
			if err != nil {
				t.Fatal(err)
			}
			src := newBlockSource(recs, 1)
			job, _ := exchangeJob(t, &crashAfterCheckpoint{crashAnywhere{crashBlocks{blockSource: src, crashAt: src.Blocks() / 2}}, store, 0}, m, 3, 60e9, 0, "")
			job.Sink = &epochMem{}
			// A step at every source batch (or block start after one) from
			// the first batch read on, barriers from the 8th batch (block
			// start): every checkpoint holds a rebalanced table.
			job.Region.Rebalance = &runtime.Rebalance{RandomEvery: 1, Seed: 5}
			job.Checkpoint = &runtime.Checkpointing{Store: store, EveryBatches: 8}
			if _, err := runtime.Run(context.Background(), job); !errors.Is(err, errCrash) {
				t.Fatalf("first run: %v", err)
			}
			first, _, err := store.Latest()
			if err != nil {
				t.Fatal(err)
			}
			if jumpTable(first.Meta.Owners, 3) {
				t.Fatalf("%d workers: the rebalanced run checkpointed jump hashing's table (checkpoint %d of %d blocks, at block %d)", m, first.Meta.ID, src.Blocks(), first.Meta.Sources["block"])
			}
			src = newBlockSource(recs, 1)
			job, _ = exchangeJob(t, &crashAfterCheckpoint{crashAnywhere{crashBlocks{blockSource: src, crashAt: src.Blocks() - 1}}, store, first.Meta.ID}, m, n, 60e9, 0, "")
			job.Sink = &epochMem{}
			job.Checkpoint = &runtime.Checkpointing{Store: store, EveryBatches: 4, Restore: first}
			if _, err := runtime.Run(context.Background(), job); !errors.Is(err, errCrash) {
				t.Fatalf("restored run: %v", err)
			}
			second, _, err := store.Latest()
			if err != nil || second.Meta.ID == first.Meta.ID {
				t.Fatalf("no checkpoint after the restore: %v", err)
			}
			old, err := kvstate.NewAssigned(first.Meta.Owners, 3)
			if err != nil {
				t.Fatal(err)
			}
			if want := old.Resize(n).Owners(); second.Meta.Channels != n || !slices.Equal(second.Meta.Owners, want) {
				t.Fatalf("%d workers, restored at %d channels: checkpointed another table (%d channels)", m, n, second.Meta.Channels)
			}
		}
	}
}

// crashAfterCheckpoint crashes where crashAnywhere does, but only once the
// store holds a checkpoint newer than after (it waits for it: whether one
// completed before the crash must not depend on the machine's speed).
type crashAfterCheckpoint struct {
	crashAnywhere
	store *snapshot.Store
	after uint64
}

func (c *crashAfterCheckpoint) wait() error {
	for i := 0; i < 20_000; i++ {
		if ck, _, err := c.store.Latest(); err == nil && ck.Meta.ID > c.after {
			return errCrash
		}
		time.Sleep(time.Millisecond)
	}
	return errors.New("no checkpoint in 20 s")
}

func (c *crashAfterCheckpoint) Next(ctx context.Context) (*core.Batch, error) {
	if c.next >= c.blocks[c.crashAt] {
		return nil, c.wait()
	}
	return c.blockSource.Next(ctx)
}

func (c *crashAfterCheckpoint) ReadBlock(ctx context.Context, b int, errs *core.ErrorPolicy, emit func(*core.Batch) error) error {
	if b == c.crashAt {
		return c.wait()
	}
	return c.blockSource.ReadBlock(ctx, b, errs, emit)
}

// The gaining channel goes on while the losing one is behind: channel 0
// is stopped (a gate before the window) at a record before the first
// rebalance step's marker and let go only when channel 1 has processed a
// record three source batches after the marker — which it can do only by
// holding the key groups it gains from channel 0 instead of waiting for
// them at the marker. The window is long (nothing fires before the end),
// so every watermark in between is quiet. The output is the reference's
// (one channel, no rebalancing). A gate still closed after 30 s means the
// gainer waited: the gate opens then, and the test fails.
func TestRebalanceGainerGoesOnWhileLoserIsBehind(t *testing.T) {
	recs := outOfOrder(20_000, 300, 21)
	const every, seed = 8, 3
	// The first random step must move a key group from channel 0 to 1
	// (the balancer's draw, redone here: Rebalance.RandomEvery).
	tbl := kvstate.NewTable(kvstate.DefaultGroups, 2)
	rnd := rand.New(rand.NewPCG(seed, 0xba1a))
	fromZero, seen := false, map[int]bool{}
	for range 1 + rnd.IntN(8) {
		g := rnd.IntN(kvstate.DefaultGroups)
		if seen[g] {
			continue
		}
		seen[g] = true
		rnd.IntN(1)
		fromZero = fromZero || tbl.Owner(g) == 0
	}
	if !fromZero {
		t.Fatal("seed: the first step moves nothing from channel 0 to 1")
	}
	want, _, _ := func() ([]string, *runtime.Report, string) {
		job, sink := exchangeJob(t, newBlockSource(recs, 9), -1, 1, 1e15, 0, "")
		return runWithLetters(t, "reference", job, sink, "")
	}()
	src := newBlockSource(recs, 9)
	stopAt, goAt := int64(src.cuts[3]+1), int64(src.cuts[every+3]+1) // positions: the first records of batches 3 and every+3
	release := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	timedOut := false
	timer := time.AfterFunc(30*time.Second, func() { timedOut = true; open() })
	defer timer.Stop()
	gate := core.OperatorDef{Name: "gate", Out: testSchema, New: func(env core.Env) (core.Operator, error) {
		return &gateOp{channel: env.Channel, stopAt: stopAt, goAt: goAt, release: release, open: open}, nil
	}}
	job, sink := exchangeJob(t, src, -1, 2, 1e15, 0, "")
	job.RingSize = 64
	job.Region.Ops = append([]core.OperatorDef{gate}, job.Region.Ops...)
	job.Region.Rebalance = &runtime.Rebalance{RandomEvery: every, Seed: seed}
	rep, err := runtime.Run(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	timer.Stop()
	if timedOut {
		t.Fatal("channel 1 did not get past the marker while channel 0 was behind it")
	}
	if !slices.Equal(sink.lines, want) {
		t.Fatalf("%d lines vs %d: %s", len(sink.lines), len(want), diffAt(sink.lines, want))
	}
	if rep.Rebalance.Holds == 0 {
		t.Fatalf("no gain held: %+v", rep.Rebalance)
	}
}

// gateOp passes batches on. On channel 0 it stops at the first batch
// holding a record at position stopAt or later until release is closed;
// on channel 1 it opens the gate at the first record at goAt or later.
type gateOp struct {
	core.Base
	channel       int
	stopAt, goAt  int64
	release       chan struct{}
	open          func()
	stopped, went bool
}

func (g *gateOp) Process(in *core.Batch, out *core.Emitter) error {
	if in.Len > 0 {
		last := slices.Max(in.Pos[:in.Len])
		switch {
		case g.channel == 0 && !g.stopped && last >= g.stopAt:
			g.stopped = true
			<-g.release
		case g.channel == 1 && !g.went && last >= g.goAt:
			g.went = true
			g.open()
		}
	}
	out.Emit(in)
	return nil
}

// Random rebalance steps under a running aggregate (one output record per
// input record, in input order): it cannot hold key groups in transit, so
// a gaining channel waits at the marker (no gain held), and the output is
// the single channel's without rebalancing, for the single source stage
// and 2 source workers, 2 and 3 channels.
func TestRebalanceStepsKeepRunningAggregate(t *testing.T) {
	recs := outOfOrder(30_000, 300, 17)
	run := func(m, n int, seed uint64) ([]string, *runtime.Report) {
		def, err := window.NewRunning(window.RunningSpec{Name: "r", Key: []string{"k"},
			Aggs: []window.Agg{{Name: "n", Func: window.Count}, {Name: "total", Func: window.Sum, Field: "v"}, {Name: "hi", Func: window.Max, Field: "v"}}}, testSchema)
		if err != nil {
			t.Fatal(err)
		}
		job, sink := exchangeJob(t, newBlockSource(recs, 5), m, n, 60e9, 0, "")
		job.Region.Ops = []core.OperatorDef{def}
		if seed != 0 {
			job.Region.Rebalance = &runtime.Rebalance{RandomEvery: 1 + int(seed%3), Seed: seed}
		}
		got, rep, _ := runWithLetters(t, fmt.Sprintf("%d workers, %d channels, seed %d", m, n, seed), job, sink, "")
		return got, rep
	}
	want, _ := run(-1, 1, 0)
	for _, seed := range []uint64{1, 2} {
		for _, m := range []int{-1, 2} {
			for _, n := range []int{2, 3} {
				got, rep := run(m, n, seed)
				name := fmt.Sprintf("%d workers, %d channels, seed %d", m, n, seed)
				if rep.Rebalance == nil || rep.Rebalance.Steps < 5 || rep.Rebalance.Holds != 0 {
					t.Fatalf("%s: rebalance report %+v", name, rep.Rebalance)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s: %d lines vs %d: %s", name, len(got), len(want), diffAt(got, want))
				}
			}
		}
	}
}
