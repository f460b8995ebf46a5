package runtime_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"streamd/core"
	"streamd/core/runtime"
	"streamd/internal/tier"
	"streamd/snapshot"
)

// slowRecords is an operator slow per record: each record moves the
// scripted clock by per (its cost as the runtime's controls see it), and
// every 8 records it sleeps 100 µs so that the producers stay ahead of it
// (sustained backpressure). The assertions read only the scripted clock;
// the sleep spreads a batch's clock moves over real time (a lump would
// reach a producer's measure late) and keeps the op ~30× slower per
// record than a source worker routes under the race detector. Each barrier reports the clock when it
// reaches it, and the operator then waits for a token on resume before
// its next record: the clock stands still until the test has seen the
// checkpoint complete.
type slowRecords struct {
	resume   chan struct{}
	barriers chan int64
	clock    *manualClock
	per      time.Duration
	held     atomic.Bool
}

func newSlowRecords(clock *manualClock, per time.Duration) *slowRecords {
	return &slowRecords{resume: make(chan struct{}), barriers: make(chan int64, 64), clock: clock, per: per}
}

func (g *slowRecords) def() core.OperatorDef {
	return core.OperatorDef{Name: "slow", Out: testSchema, State: "slow", New: func(core.Env) (core.Operator, error) { return slowRecordsOp{g}, nil }}
}

type slowRecordsOp struct{ g *slowRecords }

func (o slowRecordsOp) Process(in *core.Batch, out *core.Emitter) error {
	if o.g.held.Swap(false) {
		<-o.g.resume
	}
	for i := range in.Len {
		o.g.clock.add(o.g.per)
		if i%8 == 7 && o.g.per > 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	return out.Emit(in)
}
func (o slowRecordsOp) Watermark(int64, uint64, *core.Emitter) error { return nil }
func (o slowRecordsOp) Finish(uint64, *core.Emitter) error           { return nil }
func (o slowRecordsOp) SnapshotGroups(dst []byte, _ []int) ([]byte, error) {
	if o.g.per > 0 {
		o.g.held.Store(true)
		o.g.barriers <- o.g.clock.ns.Load()
	}
	return dst, nil
}
func (o slowRecordsOp) RestoreGroups([]byte, func(int) bool) error { return nil }

// leadingLate gives the first record of every full batch an event time
// ahead (20 minutes) of the rest of its batch, so that the next batch's
// first minutes are late: which records are depends on the watermark
// after each whole batch.
func leadingLate(recs []rec) []rec {
	out := slices.Clone(recs)
	for i := 0; i < len(out); i += core.BatchSize {
		out[i].ts += int64(20 * time.Minute)
	}
	return out
}

// Checkpoints behind an operator slow per record (10 ms a record by the
// scripted clock, 100 records/s). Debloating bounds the rings in slots, at
// least 4, and a slot held a source batch's share (up to 512 records, 5 s
// here): a barrier waited 10 s and more behind them. With pieces (cut.go) the
// stage reading the source cuts its batches so that the floor's slots hold
// about the buffer target, and a barrier may go between two pieces: every
// checkpoint reaches the slow operator within two intervals of coming due,
// and within one once the pieces are measured (after the first three). Then
// the run is stopped and restored from the last checkpoint, taken between two
// pieces of a batch, with other worker and channel counts, and the output
// equals an uninterrupted run's:
//   - with source workers (one reading; the records' event times make
//     the next batch's first minutes late after every whole batch, so
//     the output depends on the watermark after each: leadingLate);
//   - with the single source stage (a source whose batches follow its
//     own clock, here random sizes: a restore inside a batch reads the
//     rest in other batches, so the records are in event-time order).
//
// (With several workers, one that read ahead before the first
// measurement holds the floor's slots of whole batches, once, which a
// barrier in its block waits behind: docs/ARCHITECTURE.md.)
func TestCheckpointsBehindSlowRecords(t *testing.T) {
	for _, workers := range []bool{true, false} {
		name := map[bool]string{true: "source workers", false: "single source stage"}[workers]
		t.Run(name, func(t *testing.T) { checkpointsBehindSlowRecords(t, workers) })
	}
}

func checkpointsBehindSlowRecords(t *testing.T, workers bool) {
	const interval, per = 10 * time.Second, 10 * time.Millisecond
	recs := genRecords(20_000, 50, 9)
	// source is the job's source for m workers (0: the single source
	// stage).
	source := func(m int) (core.Source, int) {
		if workers {
			return fixedBlocks(recs, 32), m
		}
		return &sliceSource{recs: recs, rnd: rand.New(rand.NewPCG(3, 3))}, 0
	}
	if workers {
		recs = leadingLate(recs)
	}
	ref := &epochMem{}
	job, err := windowJob(recs, 1, ref)
	if err != nil {
		t.Fatal(err)
	}
	job.Source, job.SourceParallelism = source(2)
	if _, err := runtime.Run(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	want := ref.lines()

	dir := t.TempDir()
	store, err := snapshot.Open(dir, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	clock := &manualClock{}
	g := newSlowRecords(clock, per)
	sink := &epochMem{}
	job, err = windowJob(recs, 1, sink)
	if err != nil {
		t.Fatal(err)
	}
	job.Source, job.SourceParallelism = source(1)
	job.Region.Ops = append([]core.OperatorDef{g.def()}, job.Region.Ops...)
	job.Checkpoint = &runtime.Checkpointing{Store: store, Interval: interval, Now: clock.now}
	var live atomic.Pointer[runtime.Live]
	onStart := runtime.OnStart(func(l runtime.Live) { live.Store(&l) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := runtime.Run(ctx, job, onStart); done <- err }()
	waitFor(t, "the job to start", func() bool { return live.Load() != nil })
	l := *live.Load()
	due := int64(interval)
	// Seven checkpoints, and then more (up to 12) until one is inside a
	// batch, with workers (a barrier comes due at a batch's end now and
	// then): the one to restore from.
	var last *snapshot.Checkpoint
	inside := func() bool { return !workers || last.Meta.Sources["block_records"]%core.BatchSize != 0 }
	for k := uint64(1); k <= 7 || !inside() && k <= 12; k++ {
		var at int64
		select {
		case at = <-g.barriers:
		case err := <-done:
			t.Fatalf("the job ended before checkpoint %d: %v", k, err)
		}
		// The operator holds: the clock stands still until the checkpoint
		// is counted, and the next comes due an interval after it.
		waitFor(t, "the checkpoint", func() bool { return l.Snapshot().Checkpoints == int64(k) })
		if last, _, err = store.Latest(); err != nil || last.Meta.ID != k {
			t.Fatalf("checkpoint %d: the store's newest is %v (%v)", k, last, err)
		}
		behind := time.Duration(at - due)
		t.Logf("checkpoint %d: due at %v, reached the slow operator %v later; block %d, %d records in", k,
			time.Duration(due), behind, last.Meta.Sources["block"], last.Meta.Sources["block_records"])
		if k > 3 && behind > interval || behind > 2*interval {
			t.Errorf("checkpoint %d reached the slow operator %v after coming due: more than the interval (twice, before pieces are measured)", k, behind)
		}
		due = clock.ns.Load() + int64(interval)
		g.resume <- struct{}{}
	}
	cancel()
	close(g.resume)
	<-done
	if !inside() {
		t.Fatalf("12 checkpoints, none inside a batch (the last at %v): not the case this test is for", last.Meta.Sources)
	}

	// A copy of the checkpoints for a second restore (a run that ends
	// deletes its checkpoints).
	dir2 := t.TempDir()
	if err := os.CopyFS(dir2, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}

	// Restore from it with 3 workers and 2 channels.
	job2, err := windowJob(recs, 2, sink)
	if err != nil {
		t.Fatal(err)
	}
	job2.Source, job2.SourceParallelism = source(3)
	job2.Region.Ops = append([]core.OperatorDef{newSlowRecords(&manualClock{}, 0).def()}, job2.Region.Ops...)
	job2.Checkpoint = &runtime.Checkpointing{Store: store, Interval: time.Hour, Restore: last}
	if _, err := runtime.Run(context.Background(), job2); err != nil {
		t.Fatal(err)
	}
	if got := sink.lines(); !slices.Equal(got, want) {
		t.Fatalf("restored output: %d lines vs %d: %s", len(got), len(want), diffAt(got, want))
	}
	if !workers {
		return
	}
	// And with the single source stage, from a source that skips as a
	// generator does (its batches then start where it skipped to): the
	// checkpoint's batch_records make the rest of the position's batch one
	// batch again, as the workers read it (core.Replayable.SkipInBatch).
	job3, err := windowJob(recs, 2, sink)
	if err != nil {
		t.Fatal(err)
	}
	job3.Source, job3.SourceParallelism = &skippingBlocks{blockSource: fixedBlocks(recs, 32)}, -1
	job3.Region.Ops = append([]core.OperatorDef{newSlowRecords(&manualClock{}, 0).def()}, job3.Region.Ops...)
	store2, err := snapshot.Open(dir2, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	last2, _, err := store2.Latest()
	if err != nil || last2.Meta.ID != last.Meta.ID {
		t.Fatalf("the copy's newest checkpoint is %v (%v), want %d", last2, err, last.Meta.ID)
	}
	job3.Checkpoint = &runtime.Checkpointing{Store: store2, Interval: time.Hour, Restore: last2}
	if _, err := runtime.Run(context.Background(), job3); err != nil {
		t.Fatal(err)
	}
	if got := sink.lines(); !slices.Equal(got, want) {
		t.Fatalf("restored output, single source stage: %d lines vs %d: %s", len(got), len(want), diffAt(got, want))
	}
}

// skippingBlocks is fixedBlocks' source with a generator's Next: batches
// of core.BatchSize records from its cursor, which SkipRecords moves (so
// that after a skip its batches start there).
type skippingBlocks struct {
	*blockSource
	i int
}

func (s *skippingBlocks) Next(ctx context.Context) (*core.Batch, error) {
	if s.i >= len(s.recs) {
		return nil, io.EOF
	}
	b := core.NewBatch(testSchema)
	for end := min(len(s.recs), s.i+core.BatchSize); s.i < end; s.i++ {
		r := s.recs[s.i]
		row := b.Append(0, 0, core.NoTime, int64(s.i+1))
		row[0], row[1], row[2] = core.StringValue(r.k), core.IntValue(r.v), core.TimeValue(r.ts)
	}
	return b, nil
}

func (s *skippingBlocks) SkipRecords(_ context.Context, n int64) (int64, error) {
	k := min(n, int64(len(s.recs)-s.i))
	s.i += int(k)
	if k < n {
		return k, io.EOF
	}
	return k, nil
}

// Pieces change where data batches end, never the output: a keyed sliding
// window over out-of-order input (late records dead-lettered by the
// channels, malformed ones by the source workers) gives the same output lines,
// dead-letter file and counts with every source batch cut into pieces of
// k records per channel (forced: runtime.ForcePieces) as without, for 1
// and 3 channels, with the single source stage (gathering on) and with
// source workers. The fast tier runs a cross-section of the grid (each
// channel count and piece size once per reader), the long one all of it.
func TestPiecesKeepOutput(t *testing.T) {
	recs := outOfOrder(tier.Pick(12_000, 30_000), 300, 13)
	type result struct {
		lines   []string
		letters string
		late    int64
		out     int64
	}
	run := func(m, n, k int) result {
		name := fmt.Sprintf("%d workers, %d channels, pieces of %d", m, n, k)
		dl := filepath.Join(t.TempDir(), "dead.jsonl")
		src := newBlockSource(recs, 5)
		if m > 0 {
			// Malformed records: the workers' dead letters go through the
			// merger in position order. (The single source stage's source
			// writes its own as it reads them, ahead of the channels' late
			// ones by as much as it reads ahead: their order depends on
			// timing, with or without pieces.)
			src.every = 97
		}
		job, sink := exchangeJob(t, src, m, n, 60e9, 20e9, dl)
		src.errs = job.Errors
		lines, rep, letters := runWithLetters(t, name, job, sink, dl, runtime.ForcePieces(k))
		return result{lines, letters, rep.Late, rep.RecordsOut}
	}
	ms, ns, ks := []int{-1, 2}, []int{1, 3}, []int{7, 100}
	if tier.Long() {
		ms, ns, ks = []int{-1, 1, 2}, []int{1, 2, 3}, []int{1, 7, 16, 100, 600}
	}
	for _, m := range ms {
		want := run(m, 1, 0)
		if want.late == 0 || want.letters == "" || len(want.lines) == 0 {
			t.Fatalf("reference: %d late, %d bytes of dead letters, %d lines", want.late, len(want.letters), len(want.lines))
		}
		for i, n := range ns {
			for j, k := range ks {
				if !tier.Long() && (i+j)%2 != (m+1)%2 {
					continue // the fast tier: a cross-section (both n, both k per m)
				}
				got := run(m, n, k)
				name := fmt.Sprintf("%d workers, %d channels, pieces of %d", m, n, k)
				if !slices.Equal(got.lines, want.lines) {
					t.Fatalf("%s: output differs: %s", name, diffAt(got.lines, want.lines))
				}
				if got.letters != want.letters || got.late != want.late || got.out != want.out {
					t.Fatalf("%s: dead letters differ (%d vs %d bytes), %d late (want %d), %d out (want %d)",
						name, len(got.letters), len(want.letters), got.late, want.late, got.out, want.out)
				}
			}
		}
	}
}
