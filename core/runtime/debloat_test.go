package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"streamd/core"
	"streamd/core/runtime"
	"streamd/snapshot"
)

// gateCtl lets a test run a channel's operator step by step: each data
// batch waits for a token on release (closed: no wait), Finish waits for
// finish to close (then returns finishErr), and every barrier reports on barriers how many data
// batches the operator had processed before it.
type gateCtl struct {
	release, finish chan struct{}
	barriers        chan int64
	processed       atomic.Int64
	finishErr       error // what Finish returns
}

func newGate(open bool) *gateCtl {
	g := &gateCtl{release: make(chan struct{}), finish: make(chan struct{}), barriers: make(chan int64, 64)}
	if open {
		close(g.release)
		close(g.finish)
	}
	return g
}

func (g *gateCtl) def() core.OperatorDef {
	return core.OperatorDef{Name: "gate", Out: testSchema, State: "gate", New: func(core.Env) (core.Operator, error) { return gate{g}, nil }}
}

type gate struct{ g *gateCtl }

func (o gate) Process(in *core.Batch, out *core.Emitter) error {
	<-o.g.release
	o.g.processed.Add(1)
	return out.Emit(in)
}
func (o gate) Watermark(int64, uint64, *core.Emitter) error { return nil }
func (o gate) Finish(uint64, *core.Emitter) error           { <-o.g.finish; return o.g.finishErr }
func (o gate) SnapshotGroups(dst []byte, _ []int) ([]byte, error) {
	o.g.barriers <- o.g.processed.Load()
	return dst, nil
}
func (o gate) RestoreGroups([]byte, func(int) bool) error { return nil }

// endSource tells when its source has handed out its last batch.
type endSource struct {
	core.Source
	ended atomic.Bool
}

func (s *endSource) Next(ctx context.Context) (*core.Batch, error) {
	b, err := s.Source.Next(ctx)
	if errors.Is(err, io.EOF) {
		s.ended.Store(true)
	}
	return b, err
}

// manualClock is a clock the test moves.
type manualClock struct{ ns atomic.Int64 }

func (c *manualClock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *manualClock) add(d time.Duration) { c.ns.Add(int64(d)) }

// waitFor polls cond until it holds, failing the test after a minute (a
// generous deadline: nothing here waits on time, only on other
// goroutines).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// A job whose operator is slow (a gate the test opens batch by batch while
// a scripted clock moves 1 s per batch) checkpoints on time twice:
//
//  1. while the source stage is blocked on backpressure: buffer
//     debloating (target 4 s) has shrunk the splitter's ring to about 4 s
//     of the operator's throughput, so the barrier, due when the clock
//     passes 60 s, reaches the operator after a few batches, not after the
//     ~30 a full 64-slot ring holds;
//  2. after the end of the input, while the operator still works through
//     the batches queued: the barrier records the end of the input, and a
//     restore from it reads nothing and gives the exact output.
func TestCheckpointsUnderBackpressureAndAfterEnd(t *testing.T) {
	recs := genRecords(40000, 50, 5)
	want := expected(recs)
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
	src := &endSource{Source: job.Source}
	job.Source = src
	job.Region.Ops = append([]core.OperatorDef{g.def()}, job.Region.Ops...)
	job.BufferTarget = 4 * time.Second
	// The gate's steps count batches: one source batch and its watermark
	// per two ring slots, as without adaptive batching (with it a slot
	// holds up to 512 records, and the 64-slot ring would not fill in the
	// 60 steps below).
	job.BatchLinger = -1
	job.Checkpoint = &runtime.Checkpointing{Store: store, Interval: time.Minute, Now: clock.now}
	var live atomic.Pointer[runtime.Live]
	onStart := runtime.OnStart(func(l runtime.Live) { live.Store(&l) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := runtime.Run(ctx, job, onStart); done <- err }()
	defer func() {
		cancel()
		select {
		case <-g.finish:
		default:
			close(g.finish)
			close(g.release)
		}
		<-done
	}()
	released := int64(0)
	waitFor(t, "the job to start", func() bool { return live.Load() != nil })
	l := *live.Load()
	// step moves the clock by d and lets the gate take one batch, once
	// the source stage is ahead (the ring holds at least debloating's
	// minimum of 4 slots) or has read everything: the gate never waits
	// for the source, the source always for the gate.
	step := func(d time.Duration) {
		waitFor(t, "the source to fill the ring", func() bool { return src.ended.Load() || ring0(l) >= 4 })
		clock.add(d)
		select {
		case g.release <- struct{}{}:
			released++
		case err := <-done:
			t.Fatalf("the job ended after %d batches: %v", released, err)
		}
	}

	// 1. Under backpressure: 60 batches, 1 s each; the barrier is due at
	// 60 s (its interval) and injected after the source's next push.
	for range 60 {
		step(time.Second)
	}
	var at int64
	for at = -1; at < 0; {
		select {
		case at = <-g.barriers:
		default:
			step(time.Second)
		}
	}
	waitFor(t, "checkpoint 1", func() bool { c, _, err := store.Latest(); return err == nil && c.Meta.ID == 1 })
	if src.ended.Load() {
		t.Fatal("the source ended before checkpoint 1: no backpressure to test")
	}
	// The barrier waited behind what the debloated ring held when it came
	// due: about 4 s of the gate's throughput (2 slots, a batch and its
	// watermark, a second), with a margin for where the producer's
	// measuring windows fell (10 seen once on a loaded VM); a full ring
	// holds ~30 batches.
	if behind := at - 60; behind > 12 {
		t.Errorf("the barrier due after batch 60 reached the operator after batch %d: %d batches behind", at, behind)
	}
	t.Logf("checkpoint 1: due after batch 60, reached the operator after batch %d", at)

	// 2. After the end of the input: no time passes until the source has
	// read everything (batches are queued: the source is ahead), then the
	// clock passes the interval. Once the source stage has started
	// checkpoint 2 it pushes its barrier whatever the gate does: the gate
	// may then take the queued batches.
	for !src.ended.Load() {
		step(0)
	}
	if q := ring0(l); q == 0 {
		t.Fatal("nothing queued at the end of the input")
	}
	clock.add(2 * time.Minute)
	waitFor(t, "a barrier after the end of the input", func() bool { return l.Snapshot().CheckpointsStarted == 2 })
	for at = -1; at < 0; {
		select {
		case at = <-g.barriers:
		case g.release <- struct{}{}:
			released++
		case <-time.After(time.Minute):
			t.Fatal("no barrier after the end of the input")
		}
	}
	waitFor(t, "checkpoint 2", func() bool { c, _, err := store.Latest(); return err == nil && c.Meta.ID == 2 })
	c, _, err := store.Latest()
	if err != nil {
		t.Fatal(err)
	}
	if pos := c.Meta.Sources["source"]; pos != int64(len(recs)) {
		t.Fatalf("checkpoint 2 at position %d, want the end of the input, %d", pos, len(recs))
	}
	// The operator is still in Finish: the job fails there (a crash).
	g.finishErr = errCrash
	close(g.finish)
	if err := <-done; !errors.Is(err, errCrash) {
		t.Fatalf("crashed job: %v", err)
	}
	if n := g.processed.Load(); at != n {
		t.Errorf("barrier 2 reached the operator after batch %d of %d: not behind the whole input", at, n)
	}
	done <- nil // for the deferred clean-up

	// Restore: nothing is read again, the state comes from checkpoint 2.
	g2 := newGate(true)
	job2, err := windowJob(recs, 1, sink)
	if err != nil {
		t.Fatal(err)
	}
	job2.Region.Ops = append([]core.OperatorDef{g2.def()}, job2.Region.Ops...)
	job2.Checkpoint = &runtime.Checkpointing{Store: store, Interval: time.Minute, Now: clock.now, Restore: c}
	if _, err := runtime.Run(context.Background(), job2); err != nil {
		t.Fatal(err)
	}
	if n := g2.processed.Load(); n != 0 {
		t.Errorf("the restored run processed %d batches, want none", n)
	}
	if got := sink.lines(); !slices.Equal(got, want) {
		t.Fatalf("restored output: %d lines vs %d: %s", len(got), len(want), diffAt(got, want))
	}
}

// Debloating changes buffering, never blocks, batches or watermarks: with
// a slow channel (backpressure) and a tiny buffer target the output is
// byte-identical to a run without debloating, and to the expected one,
// with the single source stage and with two source workers (M×N rings).
func TestDebloatingKeepsOutput(t *testing.T) {
	recs := genRecords(30000, 400, 9)
	want := expected(recs)
	for _, tc := range []struct {
		target  time.Duration
		workers int
	}{{-1, 0}, {time.Millisecond, 0}, {-1, 2}, {time.Millisecond, 2}} {
		target := tc.target
		sink := &memSink{}
		job, err := windowJob(recs, 2, sink)
		if err != nil {
			t.Fatal(err)
		}
		job.Source = &sliceSource{recs: recs, rnd: rand.New(rand.NewPCG(3, 3))}
		if tc.workers > 0 {
			job.Source, job.SourceParallelism = newBlockSource(recs, 3), tc.workers
		}
		slow := core.OperatorDef{Name: "slow", Out: testSchema, New: func(env core.Env) (core.Operator, error) {
			return slowChannel{slow: env.Channel == 0}, nil
		}}
		job.Region.Ops = append([]core.OperatorDef{slow}, job.Region.Ops...)
		job.BufferTarget = target
		if _, err := runtime.Run(context.Background(), job); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(sink.lines, want) {
			t.Fatalf("buffer target %s, %d source workers: output differs: %s", target, tc.workers, diffAt(sink.lines, want))
		}
	}
}

// With source workers, channels that have read every block place the
// barriers that come due (block = the block count): a job whose slow
// channel still works through its queue when the workers have started
// every block takes a checkpoint at the end of the input, delivered by
// both channels before End, and a restore from it reads no block and
// gives the exact output. The slow channel is channel 0, then channel 1:
// the other reaches the end first, and the tail must stay open until
// every channel is there.
func TestExchangeCheckpointAfterEnd(t *testing.T) {
	for slow := range 2 {
		t.Run(fmt.Sprintf("slow channel %d", slow), func(t *testing.T) { exchangeCheckpointAfterEnd(t, slow) })
	}
}

func exchangeCheckpointAfterEnd(t *testing.T, slow int) {
	recs := genRecords(40000, 50, 6)
	want := expected(recs)
	store, err := snapshot.Open(t.TempDir(), 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	clock := &manualClock{}
	sink := &epochMem{}
	g, open := newGate(false), newGate(true)
	build := func(g0 *gateCtl, restore *snapshot.Checkpoint) (*runtime.Job, *blockSource) {
		job, err := windowJob(recs, 2, sink)
		if err != nil {
			t.Fatal(err)
		}
		src := newBlockSource(recs, 8)
		src.progress = make(chan struct{}, 1)
		job.Source, job.SourceParallelism, job.BufferTarget = src, 1, -1
		def := core.OperatorDef{Name: "gate", Out: testSchema, State: "gate", New: func(env core.Env) (core.Operator, error) {
			if env.Channel == slow {
				return gate{g0}, nil
			}
			return gate{open}, nil
		}}
		job.Region.Ops = append([]core.OperatorDef{def}, job.Region.Ops...)
		job.Checkpoint = &runtime.Checkpointing{Store: store, Interval: time.Minute, Now: clock.now, Restore: restore}
		return job, src
	}
	job, src := build(g, nil)
	var live atomic.Pointer[runtime.Live]
	onStart := runtime.OnStart(func(l runtime.Live) { live.Store(&l) })
	done := make(chan error, 1)
	go func() { _, err := runtime.Run(context.Background(), job, onStart); done <- err }()
	defer func() {
		select {
		case <-g.finish:
		default:
			close(g.finish)
			close(g.release)
			<-done
		}
	}()
	release := func() {
		select {
		case g.release <- struct{}{}:
		case err := <-done:
			t.Fatalf("the job ended: %v", err)
		}
	}
	// No time passes until the worker has read every block to its end
	// (the slow channel's queue holds it back); then a checkpoint is due,
	// and only a channel at the end of the input can place it (while a
	// block is still being read, a due barrier goes inside it). The slow
	// channel gets a batch only while two or more wait in its input, so
	// that one is still queued when the worker ends: a channel that had
	// taken its last batch would reach its end (Finish) before the barrier.
	waitFor(t, "the job to start", func() bool { return live.Load() != nil })
	l := *live.Load()
	for src.done.Load() < int64(src.Blocks()) {
		if ringOf(l, slow) < 2 {
			select { // the worker's next batch or block end
			case <-src.progress:
			case err := <-done:
				t.Fatalf("the job ended: %v", err)
			}
			continue
		}
		release()
	}
	// The other channel has read every block and the merger has taken
	// all it sent: the rings to the merger are empty, and stay so while
	// the slow channel waits on its gate. The tail is still open: the
	// slow channel is not at the end yet.
	waitFor(t, "the other channel at the end, the merger's rings empty", func() bool {
		at, toMerger := runtime.AtEndOfInput(l, 1-slow)
		return at && toMerger == 0
	})
	clock.add(2 * time.Minute)
	var at int64
	for at = -1; at < 0; {
		select {
		case at = <-g.barriers:
		case g.release <- struct{}{}:
		case <-time.After(time.Minute):
			t.Fatal("no barrier after the end of the input")
		}
	}
	waitFor(t, "the checkpoint", func() bool { c, _, err := store.Latest(); return err == nil && c.Meta.ID == 1 })
	c, _, err := store.Latest()
	if err != nil {
		t.Fatal(err)
	}
	if b, pos := c.Meta.Sources["block"], c.Meta.Sources["source"]; b != int64(src.Blocks()) || pos != int64(len(recs)) {
		t.Fatalf("checkpoint at block %d, position %d; want the end: block %d, position %d", b, pos, src.Blocks(), len(recs))
	}
	g.finishErr = errCrash
	close(g.finish)
	if err := <-done; !errors.Is(err, errCrash) {
		t.Fatalf("crashed job: %v", err)
	}
	if n := g.processed.Load(); at != n {
		t.Errorf("the barrier reached channel %d's operator after batch %d of %d", slow, at, n)
	}
	job2, src2 := build(newGate(true), c)
	if _, err := runtime.Run(context.Background(), job2); err != nil {
		t.Fatal(err)
	}
	if n := src2.reads.Load(); n != 0 {
		t.Errorf("the restored run read %d blocks, want none", n)
	}
	if got := sink.lines(); !slices.Equal(got, want) {
		t.Fatalf("restored output: %d lines vs %d: %s", len(got), len(want), diffAt(got, want))
	}
}

// sinkGate holds a sink's writes: each waits for a token on release
// (closed: no wait), and at each Barrier the sink reports on barriers how
// many writes it had done before it.
type sinkGate struct {
	release  chan struct{}
	barriers chan int64
	written  atomic.Int64
}

// gatedSink is a slow sink for output workers: an encodingMem whose
// writes wait on a gate.
type gatedSink struct {
	encodingMem
	g *sinkGate
}

func (s gatedSink) WriteEncoded(p []byte) error {
	<-s.g.release
	s.g.written.Add(1)
	return s.encodingMem.WriteEncoded(p)
}

func (s gatedSink) Barrier(epoch uint64) error {
	s.g.barriers <- s.g.written.Load()
	return s.encodingMem.Barrier(epoch)
}

// passJob is a job whose region (one channel, keyed) passes every record
// on: its output is its input, as much of it as backpressure can hold.
func passJob(recs []rec, sink core.Sink) *runtime.Job {
	pass := core.OperatorDef{Name: "pass", Out: testSchema, New: func(core.Env) (core.Operator, error) { return slowChannel{}, nil }}
	return &runtime.Job{
		Name:      "pass",
		Source:    &endSource{Source: &sliceSource{recs: recs, rnd: rand.New(rand.NewPCG(5, 5))}},
		EventTime: runtime.EventTime{Field: "ts"},
		Region:    &runtime.Region{Channels: 1, Key: []string{"k"}, Ops: []core.OperatorDef{pass}},
		Sink:      sink,
	}
}

// Checkpoints with output workers and a slow sink: the barrier crosses four
// debloated rings in series (splitter → channel → merger → output worker
// → writer, the K rings of a layer drained in turn). The sink's writes
// wait on a gate the test opens one write at a time while a scripted
// clock moves 1 s a write (interval 15 s); the region passes every record
// on, so the sink backpressures every stage. From the start (slow start:
// every ring begins at debloating's floor), the first three checkpoints
// each reach the sink (its Barrier) within twice the interval of coming
// due, counted in writes. At such a slow sink the rings' floors, not the
// target, set what is in flight (about 13 batches, and more for a window
// when a controller's decision comes out high), so the interval is 15 s
// rather than 10 s: at 10 s the barriers are 9–15 s behind, up to 23 under
// the race detector, against 19 allowed; with the output rings not
// debloated they are 256–328 s behind. A restore from the third, with 3 output workers
// and 2 channels, gives exactly the uninterrupted run's output.
func TestOutputCheckpointsUnderBackpressure(t *testing.T) {
	const interval, k = 15 * time.Second, 2
	recs := genRecords(150_000, 50, 5)
	ref := &epochMem{}
	refJob := passJob(recs, nil)
	withOutputWorkers(refJob, ref, 0)
	if _, err := runtime.Run(context.Background(), refJob); err != nil {
		t.Fatal(err)
	}
	want := ref.lines()
	if len(want) != len(recs) {
		t.Fatalf("the uninterrupted run wrote %d lines for %d records", len(want), len(recs))
	}

	store, err := snapshot.Open(t.TempDir(), 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	clock := &manualClock{}
	mem := &epochMem{}
	sg := &sinkGate{release: make(chan struct{}), barriers: make(chan int64, 64)}
	job := passJob(recs, nil)
	withOutputWorkers(job, mem, k)
	job.Sink = gatedSink{encodingMem{mem}, sg}
	src := job.Source.(*endSource)
	job.Checkpoint = &runtime.Checkpointing{Store: store, Interval: interval, Now: clock.now}
	var live atomic.Pointer[runtime.Live]
	onStart := runtime.OnStart(func(l runtime.Live) { live.Store(&l) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := runtime.Run(ctx, job, onStart); done <- err }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			close(sg.release)
			<-done
		}
	}
	defer stop()
	waitFor(t, "the job to start", func() bool { return live.Load() != nil })
	l := *live.Load()
	// step moves the clock 1 s and lets the sink take one write, once
	// the stages are ahead of it: each worker's ring to the writer holds
	// at least their floor (1), the channel's ring at least debloating's
	// (4). The sink never waits for the stages, the stages always for the
	// sink. (The merger's rings to the workers are filled in turn: one
	// may be empty while the merger waits on another.)
	step := func() {
		waitFor(t, "the stages to fill the rings", func() bool {
			if src.ended.Load() {
				return true
			}
			_, out := l.OutputRingLen()
			return slices.Min(out) >= 1 && ring0(l) >= 4
		})
		clock.add(time.Second)
		select {
		case sg.release <- struct{}{}:
		case err := <-done:
			t.Fatalf("the job ended after %d writes: %v", sg.written.Load(), err)
		}
	}
	// As in TestExchangeCheckpointsUnderBackpressure: checkpoint n is due
	// one interval after n−1 completed (the clock stands still from the
	// test seeing the barrier at the sink until it is counted), or a
	// second before; so a barrier at the sink after <= 2·secs−1 writes
	// past that completed within twice the interval.
	secs := int64(interval / time.Second)
	due := secs
	var last *snapshot.Checkpoint
	for n := uint64(1); n <= 3; n++ {
		var at int64
		for at = -1; at < 0; {
			select {
			case at = <-sg.barriers:
			default:
				step()
			}
		}
		waitFor(t, "the checkpoint", func() bool { return l.Snapshot().Checkpoints == int64(n) })
		if last, _, err = store.Latest(); err != nil || last.Meta.ID != n {
			t.Fatalf("checkpoint %d: the store's newest is %v (%v)", n, last, err)
		}
		behind := at - due
		t.Logf("checkpoint %d due after write %d reached the sink after write %d (%d s)", n, due, at, behind)
		if behind > 2*secs-1 {
			t.Errorf("checkpoint %d came due after write %d and reached the sink after write %d: %d s, more than twice the interval", n, due, at, behind)
		}
		due = clock.ns.Load()/int64(time.Second) + secs
	}
	if src.ended.Load() {
		t.Fatal("the source ended before checkpoint 3: no backpressure to test")
	}
	stop()

	// Restore from checkpoint 3 with 3 output workers and 2 channels.
	job2 := passJob(recs, nil)
	withOutputWorkers(job2, mem, 3)
	job2.Region.Channels = 2
	job2.Checkpoint = &runtime.Checkpointing{Store: store, Interval: interval, Now: clock.now, Restore: last}
	if _, err := runtime.Run(context.Background(), job2); err != nil {
		t.Fatal(err)
	}
	if got := mem.lines(); !slices.Equal(got, want) {
		t.Fatalf("restored output: %d lines vs %d: %s", len(got), len(want), diffAt(got, want))
	}
}

// ring0 is how many batches wait in channel 0's input (ringOf).
func ring0(l runtime.Live) int { return ringOf(l, 0) }

// ringOf is how many batches wait in channel c's input (Live.RingLen),
// 0 while the run has not made its rings yet.
func ringOf(l runtime.Live, c int) int {
	if r := l.RingLen(); len(r) > c {
		return r[c]
	}
	return 0
}
