package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"streamd/core"
	"streamd/core/runtime"
	"streamd/core/window"
	"streamd/internal/tier"
	"streamd/snapshot"
)

// blockSource is a core.Splittable source over records: the batch cuts
// and the blocks (runs of consecutive batches) are drawn once from a seed,
// so Next and ReadBlock cut the same batches.
type blockSource struct {
	recs   []rec
	cuts   []int // batch i holds recs[cuts[i]:cuts[i+1]]
	blocks []int // block b holds batches blocks[b]..blocks[b+1]-1
	next   int   // Next's next batch
	reads  atomic.Int64
	done   atomic.Int64 // blocks read to their end (every batch emitted)
	// every, if > 0, makes every every-th record malformed: it goes to the
	// error policy (errs, or the read's) instead of a batch.
	every int
	errs  *core.ErrorPolicy
	// progress, if not nil, gets a token (without blocking: one waits at
	// most) after each batch ReadBlock emits and after each block it reads
	// to its end, so that a test can wait for the worker's next step
	// instead of polling on the clock.
	progress chan struct{}
}

// step tells s.progress that the worker moved on.
func (s *blockSource) step() {
	select {
	case s.progress <- struct{}{}:
	default:
	}
}

func newBlockSource(recs []rec, seed uint64) *blockSource {
	rnd := rand.New(rand.NewPCG(seed, 17))
	s := &blockSource{recs: recs, cuts: []int{0}, blocks: []int{0}}
	for i := 0; i < len(recs); {
		i = min(len(recs), i+1+rnd.IntN(core.BatchSize))
		s.cuts = append(s.cuts, i)
	}
	for b := 0; b < len(s.cuts)-1; {
		b = min(len(s.cuts)-1, b+1+rnd.IntN(6))
		s.blocks = append(s.blocks, b)
	}
	return s
}

func (s *blockSource) Schema() *core.Schema { return testSchema }
func (s *blockSource) Close() error         { return nil }
func (s *blockSource) Blocks() int          { return len(s.blocks) - 1 }

func (s *blockSource) batch(i int, errs *core.ErrorPolicy) (*core.Batch, error) {
	if errs == nil {
		errs = s.errs
	}
	b := core.NewBatch(testSchema)
	for j := s.cuts[i]; j < s.cuts[i+1]; j++ {
		r := s.recs[j]
		if s.every > 0 && j%s.every == s.every-1 {
			if err := errs.Bad("blocks", int64(j+1), r.k, errors.New("malformed on purpose")); err != nil {
				b.Release()
				return nil, err
			}
			continue
		}
		row := b.Append(0, 0, core.NoTime, int64(j+1))
		row[0], row[1], row[2] = core.StringValue(r.k), core.IntValue(r.v), core.TimeValue(r.ts)
	}
	return b, nil
}

func (s *blockSource) Next(ctx context.Context) (*core.Batch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.next == len(s.cuts)-1 {
		return nil, io.EOF
	}
	s.next++
	return s.batch(s.next-1, nil)
}

func (s *blockSource) BlockStart(b int) int64 { return int64(s.cuts[s.blocks[b]]) }

func (s *blockSource) ReadBlock(ctx context.Context, b int, errs *core.ErrorPolicy, emit func(*core.Batch) error) error {
	s.reads.Add(1)
	for i := s.blocks[b]; i < s.blocks[b+1]; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		b, err := s.batch(i, errs)
		if err != nil {
			return err
		}
		if err := emit(b); err != nil {
			return err
		}
		s.step()
	}
	s.done.Add(1)
	s.step()
	return nil
}

// outOfOrder makes records whose event times go back by up to 120 s now
// and then: with 5 s of allowed out-of-orderness, some are late.
func outOfOrder(n, keys int, seed uint64) []rec {
	rnd := rand.New(rand.NewPCG(seed, 5))
	rs := make([]rec, n)
	t := int64(0)
	for i := range rs {
		t += rnd.Int64N(2e9)
		ts := t
		if rnd.IntN(20) == 0 {
			ts -= rnd.Int64N(120e9)
		}
		rs[i] = rec{k: fmt.Sprintf("key%03d", rnd.IntN(keys)), v: rnd.Int64N(1000) - 100, ts: ts}
	}
	return rs
}

// exchangeJob is a keyed window job (tumbling, or sliding when slide <
// size) over a blockSource, late records dead-lettered to dl ("" drops
// them).
func exchangeJob(t *testing.T, src core.Source, m, n int, size, slide int64, dl string) (*runtime.Job, *memSink) {
	t.Helper()
	def, err := window.New(window.Spec{
		Name: "w", Key: []string{"k"}, Size: size, Slide: slide, LateToDeadLetter: dl != "",
		Aggs: []window.Agg{{Name: "n", Func: window.Count}, {Name: "total", Func: window.Sum, Field: "v"}, {Name: "hi", Func: window.Max, Field: "v"}},
	}, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	mode := core.Skip
	if dl != "" {
		mode = core.DeadLetter
	}
	errs, err := core.NewErrorPolicy(mode, dl)
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	return &runtime.Job{
		Name: "exchange", Source: src, Errors: errs, SourceParallelism: m, RingSize: 4,
		EventTime: runtime.EventTime{Field: "ts", MaxOutOfOrder: 5e9},
		Region:    &runtime.Region{Channels: n, Key: []string{"k"}, Ops: []core.OperatorDef{def}},
		Sink:      sink,
	}, sink
}

// runWithLetters runs job and returns its sink's lines, its report and
// the dead-letter file at dl ("" when none was written).
func runWithLetters(t *testing.T, name string, job *runtime.Job, sink *memSink, dl string, opts ...runtime.Option) ([]string, *runtime.Report, string) {
	t.Helper()
	rep, err := runtime.Run(context.Background(), job, opts...)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	b, err := os.ReadFile(dl)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return sink.lines, rep, string(b)
}

// sourceStages counts the source stages (workers) a report lists and the
// records they read.
func sourceStages(rep *runtime.Report) (n int, read int64) {
	for _, s := range rep.Stages {
		if s.Stage == "source" {
			n++
			read += s.Records
		}
	}
	return n, read
}

// The determinism contract with parallel sources: an out-of-order keyed
// window job with late records (tumbling and sliding, late records dropped
// or dead-lettered) gives byte-identical output, the same late count and
// the same dead-letter file for source parallelism 1, 2, 3, 8 and channels
// 1, 2, 3, 8 as the single source stage (the whole grid in the long tier,
// for each window; in the fast one six pairs across it, three for each).
func TestExchangeIndependentOfWorkersAndChannels(t *testing.T) {
	recs := outOfOrder(40_000, 300, 3)
	for _, c := range []struct {
		name        string
		size, slide int64
		deadLetter  bool
		fast        [][2]int // the fast tier's (workers, channels) pairs
	}{
		{"tumbling", 60e9, 0, false, [][2]int{{1, 1}, {3, 2}, {8, 1}}},
		{"sliding", 60e9, 20e9, true, [][2]int{{2, 3}, {8, 8}, {1, 8}}},
	} {
		run := func(m, n int) ([]string, *runtime.Report, string, *blockSource) {
			src := newBlockSource(recs, 9)
			dl := ""
			if c.deadLetter {
				dl = filepath.Join(t.TempDir(), "dead.jsonl")
			}
			job, sink := exchangeJob(t, src, m, n, c.size, c.slide, dl)
			rep, err := runtime.Run(context.Background(), job)
			if err != nil {
				t.Fatalf("%s, %d workers, %d channels: %v", c.name, m, n, err)
			}
			letters := ""
			if dl != "" {
				b, err := os.ReadFile(dl)
				if err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
				letters = string(b)
			}
			return sink.lines, rep, letters, src
		}
		want, wantRep, wantLetters, src := run(-1, 1) // the single source stage
		if src.reads.Load() != 0 || src.Blocks() < 20 || wantRep.Late == 0 || len(want) == 0 {
			t.Fatalf("%s: reference: %d block reads, %d blocks, %d late, %d lines", c.name, src.reads.Load(), src.Blocks(), wantRep.Late, len(want))
		}
		// The fast tier runs a diagonal of the grid, half of it for each
		// window; the long one all of it.
		grid := c.fast
		if tier.Long() {
			grid = nil
			for _, m := range []int{1, 2, 3, 8} {
				for _, n := range []int{1, 2, 3, 8} {
					grid = append(grid, [2]int{m, n})
				}
			}
		}
		for _, mn := range grid {
			m, n := mn[0], mn[1]
			got, rep, letters, src := run(m, n)
			name := fmt.Sprintf("%s, %d workers, %d channels", c.name, m, n)
			if int(src.reads.Load()) != src.Blocks() {
				t.Fatalf("%s: %d block reads for %d blocks", name, src.reads.Load(), src.Blocks())
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s: %d lines vs %d: %s", name, len(got), len(want), diffAt(got, want))
			}
			if rep.Late != wantRep.Late || rep.RecordsIn != int64(len(recs)) {
				t.Fatalf("%s: %d late (want %d), %d records in", name, rep.Late, wantRep.Late, rep.RecordsIn)
			}
			workers, read := sourceStages(rep)
			if workers != m || read != int64(len(recs)) {
				t.Fatalf("%s: %d source stages reported, %d records read", name, workers, read)
			}
			// Late records are dead-lettered by the channels and
			// written by the merger in input order: the same file.
			if c.deadLetter && letters != wantLetters {
				t.Fatalf("%s: dead-letter file differs (%d vs %d bytes)", name, len(letters), len(wantLetters))
			}
		}
	}
}

// A failing block read stops the job at any source parallelism: the error
// is the job's, every stage returns (goleak), the sink is aborted.
func TestExchangeSourceError(t *testing.T) {
	recs := outOfOrder(20_000, 50, 4)
	for _, m := range []int{1, 3} {
		src := &failingBlocks{blockSource: newBlockSource(recs, 2), failAt: 5}
		job, sink := exchangeJob(t, src, m, 2, 60e9, 0, "")
		_, err := runtime.Run(context.Background(), job)
		if err == nil || err.Error() != "block 5 unreadable" {
			t.Fatalf("%d workers: %v", m, err)
		}
		if !sink.aborted || sink.closed {
			t.Fatalf("%d workers: sink aborted %v closed %v", m, sink.aborted, sink.closed)
		}
	}
}

type failingBlocks struct {
	*blockSource
	failAt int
}

func (f *failingBlocks) ReadBlock(ctx context.Context, b int, errs *core.ErrorPolicy, emit func(*core.Batch) error) error {
	if b == f.failAt {
		return fmt.Errorf("block %d unreadable", b)
	}
	return f.blockSource.ReadBlock(ctx, b, errs, emit)
}

// Malformed records met by the source workers are dead-lettered in input
// order: the dead-letter file is the single source stage's for any source
// parallelism and channel count, and so are the counts.
func TestExchangeDeadLettersInOrder(t *testing.T) {
	recs := genRecords(40_000, 100, 12) // in order: no late records
	run := func(m, n int) (string, *runtime.Report) {
		dl := filepath.Join(t.TempDir(), "dead.jsonl")
		src := newBlockSource(recs, 3)
		src.every = 97
		job, _ := exchangeJob(t, src, m, n, 60e9, 0, dl)
		src.errs = job.Errors
		rep, err := runtime.Run(context.Background(), job)
		if err != nil {
			t.Fatalf("%d workers, %d channels: %v", m, n, err)
		}
		b, err := os.ReadFile(dl)
		if err != nil {
			t.Fatal(err)
		}
		return string(b), rep
	}
	want, wantRep := run(-1, 1)
	if n := strings.Count(want, "\n"); n != len(recs)/97 || wantRep.DeadLetters != int64(n) || wantRep.Late != 0 {
		t.Fatalf("reference: %d dead letters in the file, %d reported, %d late", n, wantRep.DeadLetters, wantRep.Late)
	}
	for _, mn := range [][2]int{{1, 1}, {2, 2}, {3, 1}, {8, 3}} {
		got, rep := run(mn[0], mn[1])
		if got != want || rep.DeadLetters != wantRep.DeadLetters || rep.RecordsOut != wantRep.RecordsOut {
			t.Fatalf("%d workers, %d channels: dead-letter file differs (%d vs %d bytes), %d dead letters, %d out", mn[0], mn[1], len(got), len(want), rep.DeadLetters, rep.RecordsOut)
		}
	}
}

// Under on_error: fail the job's error names the first malformed record
// in input order, as the single source stage's does, for any source
// parallelism: a worker that meets one waits until every block before its
// own was read without one. Later blocks are slow to read first, so that
// their workers meet their bad records before the first one is reached.
func TestExchangeFailNamesFirstBadRecord(t *testing.T) {
	recs := genRecords(40_000, 100, 12)
	run := func(m int) error {
		src := newBlockSource(recs, 3)
		src.every = 4999
		job, _ := exchangeJob(t, src, m, 2, 60e9, 0, "")
		errs, err := core.NewErrorPolicy(core.Fail, "")
		if err != nil {
			t.Fatal(err)
		}
		job.Errors, src.errs = errs, errs
		var read core.Source = src
		if m > 0 {
			read = &slowFirst{blockSource: src}
		}
		job.Source = read
		_, err = runtime.Run(context.Background(), job)
		return err
	}
	want := run(-1)
	var re *core.RecordError
	if !errors.As(want, &re) || re.Pos != 4999 {
		t.Fatalf("reference: %v", want)
	}
	for _, m := range []int{2, 3, 8} {
		if got := run(m); got == nil || got.Error() != want.Error() {
			t.Fatalf("%d workers: %v, want %v", m, got, want)
		}
	}
}

// slowFirst delays the reads of the blocks before the first malformed
// record (record 4999). The delay only makes the old race likely (a later
// worker failing first); the test's assertion holds at any timing.
type slowFirst struct{ *blockSource }

func (s *slowFirst) ReadBlock(ctx context.Context, b int, errs *core.ErrorPolicy, emit func(*core.Batch) error) error {
	if s.BlockStart(b) < 4999 {
		time.Sleep(20 * time.Millisecond)
	}
	return s.blockSource.ReadBlock(ctx, b, errs, emit)
}

// crashBlocks fails the read of block crashAt with errCrash: a crash of a
// source worker at a random point.
type crashBlocks struct {
	*blockSource
	crashAt int
}

func (c *crashBlocks) ReadBlock(ctx context.Context, b int, errs *core.ErrorPolicy, emit func(*core.Batch) error) error {
	if b == c.crashAt {
		return errCrash
	}
	return c.blockSource.ReadBlock(ctx, b, errs, emit)
}

// Exactly-once with parallel sources: a keyed window job with late
// records, checkpointed at block boundaries, crashed three times and
// restored each time with another source parallelism and channel count,
// commits exactly the output of an uncrashed run with the single source
// stage (seeds 1 and 2 in the fast tier, 1 to 4 in the long one).
// Checkpoints record the block they were taken before.
func TestExchangeCrashRestore(t *testing.T) {
	recs := outOfOrder(30_000, 200, 6)
	ref, refSink := exchangeJob(t, newBlockSource(recs, 1), -1, 1, 60e9, 0, "")
	if _, err := runtime.Run(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	want := refSink.lines
	for seed := uint64(1); seed <= tier.Pick[uint64](2, 4); seed++ {
		rnd := rand.New(rand.NewPCG(seed, 41))
		store, err := snapshot.Open(t.TempDir(), 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		sink := &epochMem{}
		var restore *snapshot.Checkpoint
		crashes, restores := 0, 0
		for attempt := 0; ; attempt++ {
			m, n := 1+rnd.IntN(4), 1+rnd.IntN(4)
			src := newBlockSource(recs, 1)
			var s core.Source = src
			start := 0 // the block a restore resumes at
			if restore != nil {
				start = int(restore.Meta.Sources["block"])
			}
			if attempt < 3 && start+2 < src.Blocks() {
				s = &crashBlocks{blockSource: src, crashAt: start + 2 + rnd.IntN(src.Blocks()-start-2)}
			}
			job, _ := exchangeJob(t, s, m, n, 60e9, 0, "")
			job.Sink = sink
			job.Checkpoint = &runtime.Checkpointing{Store: store, EveryBatches: 1 + rnd.IntN(3), Restore: restore}
			_, err := runtime.Run(context.Background(), job)
			if err == nil {
				break
			}
			if !errors.Is(err, errCrash) {
				t.Fatalf("seed %d attempt %d (%d workers, %d channels): %v", seed, attempt, m, n, err)
			}
			crashes++
			c, _, lerr := store.Latest()
			switch {
			case errors.Is(lerr, snapshot.ErrNoCheckpoint):
				restore = nil
				sink.parts = nil // nothing committed: start over
			case lerr != nil:
				t.Fatal(lerr)
			default:
				if _, ok := c.Meta.Sources["block"]; !ok {
					t.Fatalf("seed %d: checkpoint without a block: %v", seed, c.Meta.Sources)
				}
				restore = c
				restores++
			}
		}
		if got := sink.lines(); !slices.Equal(got, want) {
			t.Fatalf("seed %d after %d crashes: %d lines vs %d: %s", seed, crashes, len(got), len(want), diffAt(got, want))
		}
		if crashes < 2 || restores == 0 {
			t.Fatalf("seed %d: %d crashes, %d restores", seed, crashes, restores)
		}
	}
}

// Live channel changes with source workers: the change is placed at a
// block boundary and every worker takes it up there. A keyed out-of-order
// window job (late records, dead letters) and a stateless ordered one whose
// channel count changes at random while they run give the output of the
// single source stage with a fixed channel count, for source parallelism
// 1, 2, 3 and 8 (each with every seed in the long tier; in the fast one
// the seeds take turns, so each parallelism runs with one schedule).
func TestExchangeLiveChanges(t *testing.T) {
	recs := outOfOrder(40_000, 300, 5)
	seeds := []uint64{1, 2}
	if tier.Long() {
		seeds = []uint64{1, 2, 3, 4, 5, 6}
	}
	// turn says whether the fast tier runs the i-th parallelism with the
	// seed: seed 1 the even ones, seed 2 the odd ones.
	turn := func(i int, seed uint64) bool { return tier.Long() || (uint64(i)+seed)%2 == 1 }
	t.Run("keyed", func(t *testing.T) {
		run := func(m int, seed uint64) ([]string, *runtime.Report, string) {
			dl := filepath.Join(t.TempDir(), "dead.jsonl")
			job, sink := exchangeJob(t, newBlockSource(recs, 9), m, 2, 60e9, 20e9, dl)
			if seed != 0 {
				job.Region.MaxChannels, job.Region.Schedule = 6, randomSchedule(seed, 6)
			}
			return runWithLetters(t, fmt.Sprintf("%d workers, seed %d", m, seed), job, sink, dl)
		}
		want, wantRep, wantLetters := run(-1, 0)
		if wantRep.Late == 0 || len(want) == 0 {
			t.Fatalf("reference: %d late, %d lines", wantRep.Late, len(want))
		}
		for _, seed := range seeds {
			for i, m := range []int{1, 2, 3, 8} {
				if !turn(i, seed) {
					continue
				}
				got, rep, letters := run(m, seed)
				name := fmt.Sprintf("%d workers, seed %d", m, seed)
				workers, _ := sourceStages(rep)
				if rep.Rescales < 2 || workers != m {
					t.Fatalf("%s: %d channel changes, %d source stages", name, rep.Rescales, workers)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s: %d lines vs %d: %s", name, len(got), len(want), diffAt(got, want))
				}
				if rep.Late != wantRep.Late || rep.RecordsIn != int64(len(recs)) {
					t.Fatalf("%s: %d late (want %d), %d records in", name, rep.Late, wantRep.Late, rep.RecordsIn)
				}
				if letters != wantLetters || len(letters) == 0 {
					t.Fatalf("%s: dead-letter file differs (%d vs %d bytes)", name, len(letters), len(wantLetters))
				}
			}
		}
	})
	t.Run("stateless", func(t *testing.T) {
		filter := core.OperatorDef{Name: "even", Out: testSchema, New: func(core.Env) (core.Operator, error) { return filterOdd{}, nil }}
		run := func(m int, seed uint64) ([]string, *runtime.Report) {
			sink := &memSink{}
			job := &runtime.Job{Source: newBlockSource(recs, 4), SourceParallelism: m, RingSize: 4, Sink: sink,
				Region: &runtime.Region{Channels: 2, Ops: []core.OperatorDef{filter}}}
			if seed != 0 {
				job.Region.MaxChannels, job.Region.Schedule = 6, randomSchedule(seed, 6)
			}
			rep, err := runtime.Run(context.Background(), job)
			if err != nil {
				t.Fatal(err)
			}
			return sink.lines, rep
		}
		want, _ := run(-1, 0)
		if len(want) < len(recs)/3 {
			t.Fatalf("reference: %d lines", len(want))
		}
		for _, seed := range seeds {
			for i, m := range []int{1, 3, 8} {
				if !turn(i, seed) {
					continue
				}
				got, rep := run(m, seed)
				if rep.Rescales < 2 || !slices.Equal(got, want) {
					t.Fatalf("%d workers, seed %d: %d changes; %d records, want %d, or out of order: %s", m, seed, rep.Rescales, len(got), len(want), diffAt(got, want))
				}
			}
		}
	})
}

// Malformed input (dead-lettered by the source workers) and late records
// (by the channels) in one job: the merger writes all dead letters in
// input order, so the file is the same for every source parallelism,
// channel count and run, and its positions never go back.
func TestExchangeMixedDeadLettersInOrder(t *testing.T) {
	recs := outOfOrder(30_000, 200, 21)
	run := func(m, n int) string {
		dl := filepath.Join(t.TempDir(), "dead.jsonl")
		src := newBlockSource(recs, 6)
		src.every = 211
		job, _ := exchangeJob(t, src, m, n, 60e9, 0, dl)
		src.errs = job.Errors
		rep, err := runtime.Run(context.Background(), job)
		if err != nil {
			t.Fatalf("%d workers, %d channels: %v", m, n, err)
		}
		if rep.Late == 0 || rep.DeadLetters <= rep.Late {
			t.Fatalf("%d workers, %d channels: %d late, %d dead letters: not both kinds", m, n, rep.Late, rep.DeadLetters)
		}
		b, err := os.ReadFile(dl)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	want := run(1, 1)
	last := int64(0)
	for _, line := range strings.Split(strings.TrimSpace(want), "\n") {
		var l struct{ Pos int64 }
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		if l.Pos < last {
			t.Fatalf("position %d after %d: not in input order", l.Pos, last)
		}
		last = l.Pos
	}
	for _, mn := range [][2]int{{1, 1}, {2, 3}, {3, 2}, {8, 8}, {8, 1}} {
		if got := run(mn[0], mn[1]); got != want {
			t.Fatalf("%d workers, %d channels: dead-letter file differs (%d vs %d bytes)", mn[0], mn[1], len(got), len(want))
		}
	}
}

// Trading cores between source workers and channels: with automatic
// source parallelism and Job.SourceCores, every change to n channels also
// changes the workers to SourceCores − n, at the same block boundary
// (workers added start at it, workers removed stop before it). A keyed
// window job with late records and dead letters, and a stateless ordered
// one, give the static run's output and dead-letter file (seeds 1 to 8
// for each in the long tier; 1 and 3 for the keyed job and 2 for the
// stateless one in the fast tier).
func TestExchangeTradesCores(t *testing.T) {
	recs := outOfOrder(40_000, 300, 5)
	filter := core.OperatorDef{Name: "even", Out: testSchema, New: func(core.Env) (core.Operator, error) { return filterOdd{}, nil }}
	for _, keyed := range []bool{true, false} {
		seeds := []uint64{1, 3}
		if !keyed {
			seeds = []uint64{2}
		}
		if tier.Long() {
			seeds = []uint64{1, 2, 3, 4, 5, 6, 7, 8}
		}
		run := func(seed uint64) ([]string, *runtime.Report, string) {
			dl := filepath.Join(t.TempDir(), "dead.jsonl")
			job, sink := exchangeJob(t, newBlockSource(recs, 9), -1, 2, 60e9, 20e9, dl)
			if !keyed {
				job.Region.Key, job.Region.Ops = nil, []core.OperatorDef{filter}
			}
			if seed != 0 {
				job.SourceParallelism, job.SourceCores = 0, 7
				job.Region.MaxChannels, job.Region.Schedule = 6, randomSchedule(seed, 6)
			}
			return runWithLetters(t, fmt.Sprintf("keyed %v, seed %d", keyed, seed), job, sink, dl)
		}
		want, wantRep, wantLetters := run(0)
		for _, seed := range seeds {
			got, rep, letters := run(seed)
			workers, _ := sourceStages(rep)
			name := fmt.Sprintf("keyed %v, seed %d", keyed, seed)
			// Started with 7 − 2 = 5 workers; a change to fewer channels
			// adds some.
			if rep.Rescales < 2 || workers <= 5 {
				t.Fatalf("%s: %d changes, %d source workers in all", name, rep.Rescales, workers)
			}
			if !slices.Equal(got, want) || rep.Late != wantRep.Late || letters != wantLetters {
				t.Fatalf("%s: %d lines vs %d, %d late vs %d, dead letters equal %v: %s", name, len(got), len(want), rep.Late, wantRep.Late, letters == wantLetters, diffAt(got, want))
			}
		}
	}
}
