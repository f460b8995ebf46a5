package runtime_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"streamd/core"
	"streamd/core/runtime"
	"streamd/internal/tier"
	"streamd/snapshot"
)

// fixedBlocks is a blockSource over recs in full batches, perBlock
// batches a block.
func fixedBlocks(recs []rec, perBlock int) *blockSource {
	s := &blockSource{recs: recs, cuts: []int{0}, blocks: []int{0}}
	for i := 0; i < len(recs); {
		i = min(len(recs), i+core.BatchSize)
		s.cuts = append(s.cuts, i)
	}
	for b := 0; b < len(s.cuts)-1; {
		b = min(len(s.cuts)-1, b+perBlock)
		s.blocks = append(s.blocks, b)
	}
	return s
}

// Checkpoints with source workers: under sustained backpressure checkpoints
// complete within twice their interval. One channel's operator is slow (a
// gate the test opens batch by batch while a scripted clock moves 1 s per
// batch; interval 10 s) and blocks are long (32 batches, 32 s of the
// gate's work): a barrier placed before the next block no worker has
// started would wait for the blocks in flight, half a minute and more.
// Placed inside the block the channel reads, it waits only behind what
// the debloated rings hold. From the start (the rings start at
// debloating's floor and grow only without backpressure: slow start), four
// checkpoints in a row, the first included, each reach the gate within
// one interval of coming due, for 4 source workers (also 2 in the long
// tier); the job is then stopped and restored from the last one (taken
// inside a block) with other worker and channel counts, and the output is
// exact.
func TestExchangeCheckpointsUnderBackpressure(t *testing.T) {
	const interval, perBlock = 10 * time.Second, 32
	recs := genRecords(150_000, 50, 5)
	want := expected(recs)
	for _, m := range tier.Pick([]int{4}, []int{2, 4}) {
		store, err := snapshot.Open(t.TempDir(), 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		clock := &manualClock{}
		sink := &epochMem{}
		g := newGate(false)
		job, err := windowJob(recs, 1, sink)
		if err != nil {
			t.Fatal(err)
		}
		job.Source, job.SourceParallelism = fixedBlocks(recs, perBlock), m
		job.Region.Ops = append([]core.OperatorDef{g.def()}, job.Region.Ops...)
		job.Checkpoint = &runtime.Checkpointing{Store: store, Interval: interval, Now: clock.now}
		r := startGated(t, fmt.Sprint(m, " workers"), job, g, clock)
		l := r.l
		// Each checkpoint comes due one interval after the last completed
		// (or the start), by the clock, which stands still from when the
		// test sees a barrier at the gate until the checkpoint is counted:
		// it is due at that clock + the interval, or a second before (the
		// gate may have taken a batch after the barrier before the test
		// looked), so a barrier that reaches the gate behind <= secs-1
		// batches after that completed within one interval.
		secs := int64(interval / time.Second)
		due := secs
		var last *snapshot.Checkpoint
		for k := uint64(1); k <= 4; k++ {
			at := r.untilBarrier()
			waitFor(t, "the checkpoint", func() bool { return l.Snapshot().Checkpoints == int64(k) })
			if last, _, err = store.Latest(); err != nil || last.Meta.ID != k {
				t.Fatalf("checkpoint %d: the store's newest is %v (%v)", k, last, err)
			}
			behind := at - due
			t.Logf("%d workers: checkpoint %d due after batch %d reached the gate after batch %d (%d s); position block %d, %d records in",
				m, k, due, at, behind, last.Meta.Sources["block"], last.Meta.Sources["block_records"])
			if behind > secs-1 {
				t.Errorf("%d workers: checkpoint %d came due after batch %d and reached the slow operator after batch %d: %d s, more than the interval", m, k, due, at, behind)
			}
			due = clock.ns.Load()/int64(time.Second) + secs
		}
		if last.Meta.Sources["block_records"] == 0 {
			t.Errorf("%d workers: the last checkpoint is at a block's start (%v): not the case this test is for", m, last.Meta.Sources)
		}
		r.stop()

		// Restore from the last checkpoint, inside a block, with 3 workers
		// and 2 channels.
		job2, err := windowJob(recs, 2, sink)
		if err != nil {
			t.Fatal(err)
		}
		job2.Source, job2.SourceParallelism = fixedBlocks(recs, perBlock), 3
		job2.Region.Ops = append([]core.OperatorDef{newGate(true).def()}, job2.Region.Ops...)
		job2.Checkpoint = &runtime.Checkpointing{Store: store, Interval: interval, Now: clock.now, Restore: last}
		if _, err := runtime.Run(context.Background(), job2); err != nil {
			t.Fatal(err)
		}
		if got := sink.lines(); !slices.Equal(got, want) {
			t.Fatalf("%d workers: restored output: %d lines vs %d: %s", m, len(got), len(want), diffAt(got, want))
		}
	}
}

// The start of a run with the single source stage: before anything is
// measured its ring to the channel would fill to its size (64 slots, 32
// of the gate's seconds here), and the first checkpoint, due after 10 s,
// would wait behind that. With slow start the ring starts at
// debloating's floor, so the first checkpoints each reach the slow
// operator within two intervals of coming due (the bound; the
// ring's limit and the gate's own batch).
func TestFirstCheckpointsUnderBackpressure(t *testing.T) {
	const interval = 10 * time.Second
	recs := genRecords(100_000, 50, 5)
	store, err := snapshot.Open(t.TempDir(), 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	clock := &manualClock{}
	g := newGate(false)
	job, err := windowJob(recs, 1, &epochMem{})
	if err != nil {
		t.Fatal(err)
	}
	job.Source = &endSource{Source: job.Source} // not splittable: the single source stage
	job.Region.Ops = append([]core.OperatorDef{g.def()}, job.Region.Ops...)
	// The gate's steps count ring slots: one source batch and its
	// watermark per two, as without adaptive batching (with it a slot
	// holds a gathered batch, and whether the channel finds its ring empty
	// and takes the gathered one itself depends on timing).
	job.BatchLinger = -1
	job.Checkpoint = &runtime.Checkpointing{Store: store, Interval: interval, Now: clock.now}
	r := startGated(t, "single source stage", job, g, clock)
	defer r.stop()
	l := r.l
	secs := int64(interval / time.Second)
	due := secs
	for k := uint64(1); k <= 5; k++ {
		at := r.untilBarrier()
		waitFor(t, "the checkpoint", func() bool { return l.Snapshot().Checkpoints == int64(k) })
		t.Logf("checkpoint %d due after batch %d reached the gate after batch %d", k, due, at)
		if behind := at - due; behind > 2*secs-1 {
			t.Errorf("checkpoint %d came due after batch %d and reached the slow operator after batch %d: %d s, 2 intervals or more", k, due, at, behind)
		}
		due = clock.ns.Load()/int64(time.Second) + secs
	}
}

// A checkpoint asked for through the control plane (Live.Checkpoint, `ctl
// checkpoint`) with source workers under backpressure goes inside the
// block the channel reads, as a due one does: it reaches the slow
// operator within a few batches of the request, not behind the blocks in
// flight (32 batches each), and its answer names the barrier's sequence
// number and its (block, record) position, those the checkpoint records.
func TestExchangeControlCheckpointInsideBlock(t *testing.T) {
	const perBlock = 32
	recs := genRecords(150_000, 50, 5)
	store, err := snapshot.Open(t.TempDir(), 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	clock := &manualClock{}
	g := newGate(false)
	job, err := windowJob(recs, 1, &epochMem{})
	if err != nil {
		t.Fatal(err)
	}
	src := fixedBlocks(recs, perBlock)
	job.Source, job.SourceParallelism = src, 2
	job.Region.Ops = append([]core.OperatorDef{g.def()}, job.Region.Ops...)
	job.Checkpoint = &runtime.Checkpointing{Store: store, Interval: time.Hour, Now: clock.now}
	r := startGated(t, "2 workers", job, g, clock)
	defer r.stop()
	l := r.l
	for range 40 {
		r.step()
	}
	asked := r.released
	type answer struct {
		out runtime.Outcome
		err error
	}
	ans := make(chan answer, 1)
	started := make(chan struct{})
	go func() {
		close(started)
		out, err := l.Checkpoint(context.Background(), "test")
		ans <- answer{out, err}
	}()
	<-started
	at := r.untilBarrier()
	a := <-ans
	if a.err != nil {
		t.Fatal(a.err)
	}
	c, _, err := store.Latest()
	if err != nil || c.Meta.ID != a.out.Epoch {
		t.Fatalf("checkpoint %d answered, the store's newest is %v (%v)", a.out.Epoch, c, err)
	}
	t.Logf("asked after batch %d, reached the gate after batch %d; answer %+v; checkpoint at %v", asked, at, a.out, c.Meta.Sources)
	// A few batches: the ring's limit (the first windows of a run may
	// measure it above the floor) and the steps before the request is
	// queued; behind the blocks in flight it would be 32 or more.
	if at-asked > 16 {
		t.Errorf("the barrier asked for after batch %d reached the slow operator after batch %d", asked, at)
	}
	if b, r := c.Meta.Sources["block"], c.Meta.Sources["block_records"]; a.out.Block != b || a.out.Record != r {
		t.Errorf("answer at (block %d, record %d), checkpoint at (%d, %d)", a.out.Block, a.out.Record, b, r)
	}
	if a.out.Record == 0 {
		t.Errorf("the barrier is at a block's start (%+v): not the case this test is for", a.out)
	}
	if a.out.Seq>>32 != uint64(a.out.Block) {
		t.Errorf("sequence number %#x is not in block %d", a.out.Seq, a.out.Block)
	}
	if want := src.BlockStart(int(a.out.Block)) + a.out.Record; a.out.Position != want || c.Meta.Sources["source"] != want {
		t.Errorf("position %d answered, %d recorded, want %d", a.out.Position, c.Meta.Sources["source"], want)
	}
}

// gatedRun is a job whose slow operator is a gate (newGate) that the test
// opens one batch at a time while a scripted clock moves 1 s per batch.
type gatedRun struct {
	t        *testing.T
	name     string
	l        runtime.Live
	g        *gateCtl
	clock    *manualClock
	done     chan error
	cancel   context.CancelFunc
	released int64 // batches the gate has taken
}

// startGated runs job (whose region starts with g's gate and whose
// checkpoints read clock) and returns once it has started.
func startGated(t *testing.T, name string, job *runtime.Job, g *gateCtl, clock *manualClock) *gatedRun {
	t.Helper()
	var live atomic.Pointer[runtime.Live]
	onStart := runtime.OnStart(func(l runtime.Live) { live.Store(&l) })
	ctx, cancel := context.WithCancel(context.Background())
	r := &gatedRun{t: t, name: name, g: g, clock: clock, done: make(chan error, 1), cancel: cancel}
	go func() { _, err := runtime.Run(ctx, job, onStart); r.done <- err }()
	waitFor(t, "the job to start", func() bool { return live.Load() != nil })
	r.l = *live.Load()
	return r
}

// step moves the clock 1 s and lets the gate take one batch, once channel
// 0's rings hold debloating's minimum: the gate never waits for the
// producers, the producers always for the gate.
func (r *gatedRun) step() {
	r.t.Helper()
	waitFor(r.t, "the producers to fill the rings", func() bool { return ring0(r.l) >= 4 })
	r.clock.add(time.Second)
	select {
	case r.g.release <- struct{}{}:
		r.released++
	case err := <-r.done:
		r.t.Fatalf("%s: the job ended after %d batches: %v", r.name, r.released, err)
	}
}

// untilBarrier steps until a barrier reaches the gate and returns the
// batches the gate had taken then.
func (r *gatedRun) untilBarrier() int64 {
	r.t.Helper()
	for {
		select {
		case at := <-r.g.barriers:
			return at
		default:
			r.step()
		}
	}
}

// stop cancels the job, opens the gate and waits for the run to end.
func (r *gatedRun) stop() {
	r.cancel()
	close(r.g.finish)
	close(r.g.release)
	<-r.done
}
