package runtime

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"streamd/core"
	"streamd/core/runtime/logic"
	"streamd/ring"
)

// Parallel output workers (docs/ARCHITECTURE.md, "Parallel output").
//
// Without them (K = 0) the merger runs the one output worker inline, which
// runs the post-region operators and has the sink write its batches: one
// core carries all of that. With K output workers the merger only merges:
// it hands the data batches it releases, in output order, to worker 0, 1,
// …, K−1, 0, … (round-robin: batch i to worker i mod K). A worker runs its
// own instances of the post-region operators (stateless per record, like
// the pre-region ones) and encodes what they emit with the sink's encoder
// (core.EncodingSink) into one item per batch it was given, possibly
// empty. The writer stage takes item i from worker i mod K, so it sees the
// items in the merger's order, and writes their bytes: the only serial
// step left after the merge, with no per-field work. At end of stream the
// merger gives every worker an End marker (its post-region instances
// finish), one per worker in round-robin order, and the writer stops at
// the first End item after consuming the others.
//
// Checkpoint barriers take their place in the same round-robin sequence:
// the merger hands barrier n, like a data batch, to the next worker, which
// passes it through its post-region chain and makes it an item of its own
// (a marker item, no bytes). The writer therefore meets the barrier after
// the items of every batch the merger released before it and before any
// released after it, and does there what the inline worker's last step
// does without workers (sinkCheckpoint): dead letters synced,
// EpochSink.Barrier (the epoch's part flushed and fsynced), the manifest
// taken, the checkpoint acknowledged. The checkpoint records exactly the
// bytes written before the barrier, whatever K. The writer is the sink's
// goroutine: it also commits epochs the coordinator completed
// (EpochSink.Commit) as its items pass.
//
// A file sink without checkpoints (core.PositionalSink) needs no writer:
// each worker places its item in the merger's order through the sequencer
// (writeAt) and writes its bytes at their offset itself.
//
// A sink that cannot encode apart keeps the one inline worker (K = 0).
// Job.OnSink is called by the writer, with a batch that holds only Len and
// Stamp (its records were encoded).

// encoded is an output worker's item: the bytes of one merger batch, or a
// marker the writer acts on in its place in the order.
type encoded struct {
	buf     []byte
	end     bool
	mark    *core.Batch // a Barrier marker (owned by the item), else nil
	records int         // records encoded in buf
	stamp   int64       // the merger batch's Stamp
}

var encodedPool = sync.Pool{New: func() any { return &encoded{buf: make([]byte, 0, 64<<10)} }}

// Parts (core.PartSink, the job file's `parts: N`): the workers are the
// parts, and there is no writer. Records are numbered in the merger's
// output order (before the post-region operators) and cut into chunks of
// PartChunk records; chunk c goes to worker c mod N, which runs its
// post-region instances and writes what they emit to part c mod N itself.
// The merger (or, without a region, the source stage) cuts a batch that
// straddles a chunk boundary in two, copying the records after the
// boundary. The merger's order is independent of the channel count, the
// source parallelism and timing, and a record's chunk depends only on its
// place in that order, so each part's content is too; batch boundaries
// would not do (the merger forwards the channels' batches whole and
// flushes a partial one whenever its input runs dry).

// PartChunk is the number of consecutive records, in the merger's output
// order, that go to the same part of a parts sink: records
// [c·PartChunk, (c+1)·PartChunk) go to part c mod N.
const PartChunk = 8192

// output is the output side of a run: K output workers, or (K = 0) the
// one worker the stage before runs inline (inline). Either way the stage
// before hands it its output (Push) and the workers carry out the same
// steps (outputWorker.step); K = 0 only means no goroutines and no rings.
type output struct {
	// inline is the one worker when K = 0 (nil with workers): Push runs
	// it on the caller's goroutine.
	inline *outputWorker
	sink   core.EncodingSink // nil for parts
	parts  core.PartSink     // nil but for parts
	// chunkLeft is how many more records the current chunk takes (parts;
	// merger only).
	chunkLeft int
	in        []*ring.SPSC[*core.Batch] // merger → worker k
	out       []*ring.SPSC[*encoded]    // worker k → writer
	posts     []*instSet
	cpus      []*stageCPU
	// next is the worker that gets the merger's next batch, mergerCPU the
	// merger's CPU account (merger only).
	next      int
	mergerCPU *stageCPU
	// db debloats the rings to the workers (merger's; nil: off), dbs[k]
	// worker k's ring to the writer (debloat.go).
	db  *debloater
	dbs []*debloater
	// pos and seq, for a sink that takes positional writes without
	// checkpoints: the workers write their items themselves at offsets
	// seq hands out in order, and there is no writer stage.
	pos core.PositionalSink
	seq *sequencer
	// fails decides the workers' failures in item order.
	fails *outFailures
}

// errOutputFailed is what Push returns to the stage before when the
// inline worker (K = 0) failed: outFailures has failed the run with the
// worker's error already, and the stage before stops.
var errOutputFailed = errors.New("output worker failed")

// outputWorkers is how many output workers the run uses: 0 keeps the
// post-region operators and the sink on the one worker the merger (or the
// source stage) runs inline.
// Job.OutputParallelism > 0 asks for that many, 0 lets the cores decide
// (those left beside the source workers, the channels, the merger, the
// writer and one to spare; at least 2, or none), < 0 asks for none.
//
// A parts sink (core.PartSink) has one worker per part, with or without a
// region.
func outputWorkers(job *Job, sources, cores int) int {
	if ps, ok := job.Sink.(core.PartSink); ok {
		return ps.Parts()
	}
	_, ok := job.Sink.(core.EncodingSink)
	if !ok || job.Region == nil || job.OutputParallelism < 0 {
		return 0
	}
	if k := job.OutputParallelism; k > 0 {
		return k
	}
	k := cores - max(1, sources) - job.Region.Channels - 3
	if k < 2 {
		return 0
	}
	return k
}

// buildOutput makes the output side of K = k workers: their rings and
// post-region instances, or for k = 0 the one worker run inline. The sink
// must be open (NewEncoder).
func (r *run) buildOutput(k int) error {
	o := &output{chunkLeft: PartChunk}
	r.out = o
	o.fails = newOutFailures(max(k, 1), k > 0)
	if k == 0 {
		post, err := r.instantiate(r.job.Post, core.Env{Channels: 1, Errors: r.job.Errors}, r.postCounters)
		if err != nil {
			return err
		}
		o.posts = []*instSet{post}
		o.inline = newOutputWorker(r, 0, nil)
		return nil
	}
	o.sink, _ = r.job.Sink.(core.EncodingSink)
	o.parts, _ = r.job.Sink.(core.PartSink)
	if ps, ok := r.job.Sink.(core.PositionalSink); ok && ps.Positional() && o.parts == nil && r.ck == nil {
		start, ok, err := ps.Positions()
		if err != nil {
			return err
		}
		if ok {
			o.pos, o.seq = ps, &sequencer{off: start, ready: map[int64]*encoded{}}
		}
	}
	for w := range k {
		in, err := r.newRing()
		if err != nil {
			return err
		}
		if o.parts == nil && o.seq == nil {
			out, err := ring.New[*encoded](r.job.RingSize)
			if err != nil {
				return err
			}
			slowStart(r.job, out, debloatItemMin)
			r.register(out)
			o.out = append(o.out, out)
		}
		post, err := r.instantiate(r.job.Post, core.Env{Channel: w, Channels: k, Errors: r.job.Errors}, r.postCounters)
		if err != nil {
			return err
		}
		sc := r.newReplicatedStageCPU("output", w)
		o.in, o.posts, o.cpus = append(o.in, in), append(o.posts, post), append(o.cpus, sc)
		slowStart(r.job, in, debloatItemMin) // items only: debloat.go
		o.dbs = append(o.dbs, r.newItemDebloater())
	}
	o.db = r.newItemDebloater()
	return nil
}

// workers is K, the number of output workers (0: the one worker runs
// inline).
func (o *output) workers() int { return len(o.in) }

// Push is what the merger hands its output to (in place of the post-region
// chain): data batches and barriers round-robin to the workers, End and
// Update markers (a change of logic of a post-region operator) to every
// worker; other markers matter only to operators that keep state, which
// the post-region ones do not. For parts, data goes by chunks
// (PartChunk). With K = 0 the one worker takes each on the caller's
// goroutine (give). It takes ownership of b. Merger only (or the source
// stage without a region). An error stops the caller: the run failed.
func (o *output) Push(b *core.Batch) error {
	switch b.Kind {
	case core.Data, core.Barrier:
		if o.parts != nil && b.Kind == core.Data {
			return o.pushChunks(b)
		}
		if o.inline != nil {
			return o.give(0, b)
		}
		w := o.next
		o.next = (o.next + 1) % o.workers()
		return o.give(w, b)
	case core.End, core.Update:
		if o.inline != nil {
			return o.give(0, b)
		}
		// To every worker (each meets every update, update.go, whichever
		// stage it targets). An Update marker is no item: the workers do
		// not count it, so the round-robin order of items goes on as
		// before, and each worker meets it after every batch it was given
		// before the sync point and before any after it.
		for j := range o.in {
			w := (o.next + j) % len(o.in)
			m := core.NewMarker(b.Kind)
			m.MarkSeq, m.Stamp, m.Control = b.MarkSeq, b.Stamp, b.Control
			if err := o.give(w, m); err != nil {
				b.Release()
				return err
			}
		}
		b.Release()
	default:
		b.Release()
	}
	return nil
}

// give hands b to worker w: through its ring, debloated, or with K = 0 to
// the inline worker's step. It takes ownership of b.
func (o *output) give(w int, b *core.Batch) error {
	if ow := o.inline; ow != nil {
		if ow.step(b) && ow.failed {
			return errOutputFailed
		}
		return nil
	}
	var err error
	if o.db != nil {
		_, err = o.db.push(o.mergerCPU, w, o.in[w], b)
	} else {
		_, err = o.mergerCPU.push(o.in[w], b)
	}
	if err != nil {
		discard(b)
	}
	return err
}

// pushChunks hands b's records to the part workers by chunk: the records
// left in the current chunk to its worker, the rest (cut off into a new
// batch) to the next chunk's. It takes ownership of b.
func (o *output) pushChunks(b *core.Batch) error {
	for b != nil {
		var rest *core.Batch
		if records(b) > o.chunkLeft { // held or, from the merger, listed (gather.go)
			rest = cut(b, o.chunkLeft)
		}
		o.chunkLeft -= records(b)
		w := o.next
		if o.chunkLeft == 0 {
			o.next, o.chunkLeft = (o.next+1)%len(o.in), PartChunk
		}
		if err := o.give(w, b); err != nil {
			if rest != nil {
				discard(rest)
			}
			return err
		}
		b = rest
	}
	return nil
}

// launchOutput starts the workers and the writer (none for parts, for
// positional writes, and with K = 0).
func (r *run) launchOutput() {
	o := r.out
	for w := range o.in {
		r.wg.Add(1)
		r.placer.Start("output", w, func() {
			defer r.wg.Done()
			defer r.recoverStage("output", w)
			sc := o.cpus[w]
			sc.begin()
			defer sc.end()
			newOutputWorker(r, w, sc).loop()
		})
	}
	if o.parts != nil || o.seq != nil || o.inline != nil {
		return // no writer
	}
	wcpu := r.newStageCPU("writer", 0)
	r.wg.Add(1)
	r.placer.Start("writer", 0, func() {
		defer r.wg.Done()
		defer r.recoverStage("writer", 0)
		wcpu.begin()
		defer wcpu.end()
		if err := newWriter(r, wcpu).loop(); err != nil {
			r.fail(err)
			r.cancelRings()
		}
	})
}

// outputWorker is the sink end of a run: the post-region instances, then
// the sink's step. Output worker w of K runs on its own goroutine (loop):
// each batch from the merger goes through the worker's post-region
// instances, and what they emit is encoded into one item for the writer
// (or, with positional writes, written at its offset by the worker
// itself) or, for parts, written to part w. Without output workers
// (K = 0) the one worker is run inline by the stage before it — the
// merger, or the source stage without a region — which hands it its
// output (output.give) on its own goroutine, with no ring between them;
// its last step is the sink's (writeBatch): the checkpoint step and
// Sink.Write.
//
// Whatever K, a worker takes each batch in one step (step): a change of
// logic of one of its post-region instances (update), or the batch
// through its chain; a failure there goes to the output side's arbiter
// (outFailures), which fails the run with the earliest in the merger's
// order. Everything in it belongs to the goroutine that runs it, which
// writes it per batch: it is padded so that no other goroutine's data
// shares its cache lines.
type outputWorker struct {
	_  [core.CacheLine]byte
	r  *run
	o  *output
	w  int
	sc *stageCPU // nil inline: the stage that runs it accounts for it
	// insts are the worker's post-region instances, made for env (their
	// Channel and Channels: the worker's index and K, or 0 and 1 inline).
	insts []instance
	env   core.Env
	// logic is the epoch of the logic insts run (update).
	logic logic.Follower
	// chain is insts, then final, its last step: encode, writePart or,
	// inline, writeBatch.
	chain *core.Chain
	final func(*core.Batch) error
	// item is the index, in the merger's order, of the item the worker
	// takes next (outFailures): data batches and barriers are items i
	// with i mod K = w (K = 0: every one), and for parts the chunk c
	// (c mod K = w) they belong to, of which left records are to come.
	item, k int64
	left    int
	failed  bool            // its failure went to outFailures
	enc     core.Encoder    // the sink's (encoding workers only)
	cur     *encoded        // the item being encoded (encoding workers only)
	part    core.PartWriter // part w's (parts only)
	todo    []placed        // writeAt's list, reused from call to call
	_       [core.CacheLine]byte
}

// newOutputWorker makes worker w of the run's output side (K = 0: the
// inline one); sc is its CPU account (nil inline). Called on the
// goroutine that runs it, or for the inline one before it starts.
func newOutputWorker(r *run, w int, sc *stageCPU) *outputWorker {
	o := r.out
	k := max(o.workers(), 1)
	ow := &outputWorker{r: r, o: o, w: w, sc: sc, insts: o.posts[w].insts, logic: logic.NewFollower(logic.Post, 0),
		env:  core.Env{Channel: w, Channels: k, Errors: r.job.Errors},
		item: int64(w), k: int64(k), left: PartChunk}
	switch {
	case o.workers() == 0: // inline
		ow.final = ow.writeBatch
	case o.parts != nil:
		ow.part = o.parts.Part(w)
		ow.final = ow.writePart
	default:
		ow.enc = o.sink.NewEncoder()
		ow.final = ow.encode
	}
	ow.chain = chainOf(ow.insts, ow.final)
	return ow
}

// loop runs worker w of K until its End, its failure (then it drains) or
// a cancel (whoever failed said so).
func (ow *outputWorker) loop() {
	o, w := ow.o, ow.w
	defer o.fails.done(ow.r, w)
	for {
		b, err := popFilled(ow.sc, o.in[w])
		if err != nil {
			return // canceled: whoever failed said so
		}
		if ow.step(b) {
			if ow.failed {
				ow.drain()
			}
			return
		}
	}
}

// step takes one batch from the stage before, in its order; it takes
// ownership of b. An Update marker changes the worker's post-region
// instances (update); anything else goes through the chain to the
// worker's last step, and an encoding worker's item then on to the
// writer (or to its offset). stop says the worker goes no further: b was
// End, it failed (failed: the failure went to outFailures, which decides
// it), or the run is stopping.
func (ow *outputWorker) step(b *core.Batch) (stop bool) {
	o, w := ow.o, ow.w
	t := ow.item
	if b.Kind == core.Update {
		// A change of logic: not an item (update.go).
		if err := ow.update(b); err != nil {
			return ow.fail(t, err)
		}
		return false
	}
	end := b.Kind == core.End
	n := b.Len
	if ow.enc != nil {
		cur := encodedPool.Get().(*encoded)
		cur.buf, cur.end, cur.mark, cur.records, cur.stamp = cur.buf[:0], end, nil, 0, b.Stamp
		ow.cur = cur
	}
	if err := ow.chain.Push(b); err != nil {
		if ow.cur != nil {
			ow.cur.release()
			ow.cur = nil
		}
		if errors.Is(err, ring.ErrCanceled) || errors.Is(err, ring.ErrClosed) {
			return true
		}
		// The first failing item in the merger's order fails the job.
		return ow.fail(t, err)
	}
	if !end {
		ow.advance(n)
		if o.inline == nil { // one worker: its failure is decided at once (fail)
			o.fails.processed(ow.r, w, ow.item)
		}
	}
	cur := ow.cur
	if cur == nil {
		return end
	}
	ow.cur = nil
	if o.seq != nil { // positional: this worker writes its own bytes
		if end {
			cur.release()
			return true
		}
		if err := ow.writeAt(cur, t); err != nil { // takes cur
			return ow.fail(t, err)
		}
		return false
	}
	var err error
	if db := o.dbs[w]; db != nil {
		_, err = db.pushEncoded(ow.sc, 0, o.out[w], cur)
	} else {
		_, err = ow.sc.pushEncoded(o.out[w], cur)
	}
	if err != nil {
		cur.release()
		return true
	}
	return end
}

// advance moves the worker's item index past a data batch of n records
// or a barrier (n = 0): by K items, or for parts to its next chunk when
// this one is complete (the merger cuts batches at chunk boundaries).
func (ow *outputWorker) advance(n int) {
	if ow.part == nil {
		ow.item += ow.k
		return
	}
	if ow.left -= n; ow.left == 0 {
		ow.item, ow.left = ow.item+ow.k, PartChunk
	}
}

// fail hands the worker's failure on item t to outFailures, which fails
// the run with the earliest in the merger's order once no other worker
// can fail before it; stop is true.
func (ow *outputWorker) fail(t int64, err error) (stop bool) {
	ow.failed = true
	ow.o.fails.register(ow.w, t, err)
	ow.o.fails.check(ow.r)
	return true
}

// toSink is the sink's step for every batch before its records are
// written, whatever K (the inline worker's last step, or the writer's for
// an item, b then holding only Len and Stamp): the checkpoint step
// (sinkCheckpoint: an epoch completed since is committed; at a barrier
// the epoch's output is made durable and acknowledged), then Job.OnSink
// for records. b is borrowed.
func (r *run) toSink(b *core.Batch) error {
	if r.ck != nil {
		if err := r.sinkCheckpoint(b); err != nil {
			return err
		}
	}
	if hook := r.job.OnSink; hook != nil && b.Kind == core.Data && b.Len > 0 {
		hook(b)
	}
	return nil
}

// writeBatch is the inline worker's last step: the sink's checkpoint step
// (sinkCheckpoint: an epoch completed since is committed; at a barrier the
// epoch's output is made durable and acknowledged), then a data batch is
// written by the sink, which borrows it. It takes ownership of b.
func (ow *outputWorker) writeBatch(b *core.Batch) error {
	defer b.Release()
	r := ow.r
	if b.Kind == core.Data {
		r.recOut.Add(int64(b.Len)) // counted before Job.OnSink sees them
	}
	if err := r.toSink(b); err != nil || b.Kind != core.Data {
		return err
	}
	return r.job.Sink.Write(b)
}

// encode is the chain's last step on a worker that encodes: a data
// batch's records are encoded into the item being built, a barrier
// becomes the item's marker (the writer acts on it and releases it). It
// takes ownership of b.
func (ow *outputWorker) encode(b *core.Batch) error {
	switch b.Kind {
	case core.Data:
		ow.r.recOut.Add(int64(b.Len))
		ow.cur.records += b.Len
		ow.cur.buf = ow.enc.Encode(ow.cur.buf, b)
	case core.Barrier:
		ow.cur.mark = b // the writer acts on it and releases it
		return nil
	}
	b.Release()
	return nil
}

// outFailures decides, among output workers that failed (their
// post-region operators, a change of their logic, or their sink step),
// the failure of the earliest item in the merger's order — the one the
// worker run inline would have met — once every other worker has
// processed all its items before it (failure.go does the same for
// channels). With K = 0 the one worker's failure is decided at once.
type outFailures struct {
	wrap    bool // name the worker in the error (K > 0)
	mu      sync.Mutex
	pending atomic.Bool
	next    []atomic.Int64 // by worker: the next item it will process (MaxInt64: done)
	failed  []bool
	best    int64 // the earliest failed item, -1: none
	err     error
	decided bool
}

// newOutFailures is the arbiter of k ≥ 1 workers; wrap says errors name
// the worker (K > 0).
func newOutFailures(k int, wrap bool) *outFailures {
	f := &outFailures{next: make([]atomic.Int64, k), failed: make([]bool, k), best: -1, wrap: wrap}
	for w := range f.next {
		f.next[w].Store(int64(w))
	}
	return f
}

// register records worker w's failure on item t.
func (f *outFailures) register(w int, t int64, err error) {
	f.mu.Lock()
	f.failed[w] = true
	if f.best < 0 || t < f.best {
		f.best, f.err = t, err
	}
	f.mu.Unlock()
	f.pending.Store(true)
}

// processed notes that worker w's next item is next, and decides a
// pending failure if it can.
func (f *outFailures) processed(r *run, w int, next int64) {
	f.next[w].Store(next)
	f.check(r)
}

// done notes that worker w stopped.
func (f *outFailures) done(r *run, w int) { f.processed(r, w, math.MaxInt64) }

func (f *outFailures) check(r *run) {
	if !f.pending.Load() {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.decided {
		return
	}
	for w := range f.next {
		if !f.failed[w] && f.next[w].Load() <= f.best {
			return // worker w may still fail on an earlier item
		}
	}
	f.decided = true
	err := f.err
	var re *core.RecordError
	if f.wrap && !errors.As(err, &re) {
		err = fmt.Errorf("output worker %d: %w", int(f.best%int64(len(f.next))), err)
	}
	r.fail(err)
	r.cancelRings()
}

// drain is the worker's loop after its operators failed: it takes and
// drops what the merger sends (so that the merger does not stop on it)
// until the failure is decided, the run stops or the stream ends.
func (ow *outputWorker) drain() {
	r, o := ow.r, ow.o
	for {
		o.fails.check(r)
		b, err := popFilled(ow.sc, o.in[ow.w])
		if err != nil {
			return
		}
		end := b.Kind == core.End
		b.Release()
		if end {
			return
		}
	}
}

// writeAt hands item i (the merger's batch i, encoded by this worker) to
// the sequencer and writes what that makes placeable (core.PositionalSink).
// Items are placed in the merger's order, each at the offset after the one
// before; whichever worker completes a run of consecutive items places the
// whole run under the lock and writes those bytes after it, side by side
// with the other workers. No worker waits for another.
func (ow *outputWorker) writeAt(it *encoded, i int64) error {
	q := ow.o.seq
	mine := ow.todo[:0]
	q.mu.Lock()
	q.ready[i] = it
	for {
		next, ok := q.ready[q.next]
		if !ok {
			break
		}
		delete(q.ready, q.next)
		q.next++
		mine = append(mine, placed{next, q.off})
		q.off += int64(len(next.buf))
		if hook := ow.r.job.OnSink; hook != nil && next.records > 0 {
			hook(&core.Batch{Kind: core.Data, Len: next.records, Stamp: next.stamp})
		}
	}
	q.mu.Unlock()
	var err error
	for _, p := range mine {
		if len(p.it.buf) > 0 && err == nil {
			err = ow.o.pos.WriteAt(p.it.buf, p.off)
		}
		p.it.release()
	}
	clear(mine)
	ow.todo = mine[:0]
	return err
}

// sequencer places the output workers' items in the merger's order
// (positional writes): item next goes at off.
type sequencer struct {
	mu    sync.Mutex
	ready map[int64]*encoded // encoded, waiting for the items before
	next  int64
	off   int64
}

// placed is an item and its offset.
type placed struct {
	it  *encoded
	off int64
}

// writePart is the chain's last step on a part's worker: a data batch is
// written to the part. Job.OnSink is called here, by every part's worker,
// concurrently. It takes ownership of b.
func (ow *outputWorker) writePart(b *core.Batch) error {
	defer b.Release()
	if b.Kind != core.Data {
		return nil
	}
	ow.r.recOut.Add(int64(b.Len))
	if hook := ow.r.job.OnSink; hook != nil {
		hook(b)
	}
	return ow.part.Write(b)
}

// update carries out, on this worker, the change of logic an Update
// marker b brings (update.go): the worker meets the update, and when it
// targets a post-region operator the worker's instance is replaced (or
// retuned) and its chain made anew. Every batch the worker was given
// before the marker went through the old chain, every one after it goes
// through the new one. It takes ownership of b: the marker goes no
// further.
func (ow *outputWorker) update(b *core.Batch) error {
	u := updateOf(b)
	b.Release()
	if u == nil {
		return errors.New("output: an Update marker without its update")
	}
	swapped, err := meet(&ow.logic, ow.insts, u, ow.env)
	if err != nil || !swapped {
		return err
	}
	ow.chain = chainOf(ow.insts, ow.final)
	return nil
}

// release returns it to the pool, releasing a marker it still holds.
func (it *encoded) release() {
	if it.mark != nil {
		it.mark.Release()
		it.mark = nil
	}
	encodedPool.Put(it)
}

// writer is the last stage with output workers: item i from worker i mod
// K, in the merger's order, written by the sink; at a barrier item, the
// sink's checkpoint step. It is the sink's goroutine. Everything in it
// belongs to that goroutine; it is padded so that no other goroutine's
// data shares its cache lines.
type writer struct {
	_     [core.CacheLine]byte
	r     *run
	o     *output
	sc    *stageCPU
	shell *core.Batch // for Job.OnSink and sinkCheckpoint: Len and Stamp only
	_     [core.CacheLine]byte
}

// newWriter makes the writer of the run's output side; sc is its CPU
// account.
func newWriter(r *run, sc *stageCPU) *writer {
	return &writer{r: r, o: r.out, sc: sc, shell: &core.Batch{Kind: core.Data}}
}

// loop runs the writer until the End items or a cancel (nil: whoever
// failed said so); an error it returns fails the job.
func (wr *writer) loop() error {
	o, sc := wr.o, wr.sc
	k := len(o.out)
	for i := 0; ; i++ {
		it, err := popEncoded(sc, o.out[i%k])
		if err != nil {
			return nil // canceled: whoever failed said so
		}
		if it.end {
			// Every worker got an End, one after another: take the rest.
			it.release()
			for j := 1; j < k; j++ {
				if it, err = popEncoded(sc, o.out[(i+j)%k]); err != nil {
					return nil
				}
				it.release()
			}
			return nil
		}
		if err := wr.write(it); err != nil {
			it.release()
			return err
		}
		it.release()
	}
}

// write hands one item to the sink: the checkpoint step first (an epoch
// completed since is committed; at a barrier item the epoch's output is
// made durable and acknowledged), then its bytes. it is borrowed.
func (wr *writer) write(it *encoded) error {
	b := it.mark
	if b == nil {
		b = wr.shell
		b.Len, b.Stamp = it.records, it.stamp
	}
	if err := wr.r.toSink(b); err != nil {
		return err
	}
	if len(it.buf) == 0 {
		return nil
	}
	return wr.o.sink.WriteEncoded(it.buf)
}

// popFilled is an output worker's next batch from the merger, with the
// runs it lists copied in (gather.go).
func popFilled(sc *stageCPU, rg *ring.SPSC[*core.Batch]) (*core.Batch, error) {
	b, err := sc.pop(rg)
	if err != nil {
		return nil, err
	}
	fill(b)
	return b, nil
}

// pushEncoded is sc.push for the workers' rings to the writer.
func (sc *stageCPU) pushEncoded(rg *ring.SPSC[*encoded], it *encoded) (int64, error) {
	return pushWaiting(sc, rg, it)
}

func popEncoded(sc *stageCPU, rg *ring.SPSC[*encoded]) (*encoded, error) {
	return popWaiting(sc, rg)
}
