package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"streamd/core"
	"streamd/core/runtime/logic"
	"streamd/kvstate"
	"streamd/ring"
)

// Source workers (docs/ARCHITECTURE.md, "Parallel sources and the M×N
// exchange"): each reads the blocks the exchange's routings give it, in
// block order, and feeds each through event time, its own pre-region
// instances and its own splitter, onto its rings to the channels
// (exchange.go). Between two of its batches and at its blocks' ends it
// sends the barriers requested in its block; before a block it takes up
// that block's routing, sends what was placed before the block (a
// barrier, a change of logic) and places the next change. A failed
// block fails the job only when every block before it was read without
// failing (blockFailed), so that the error is the one reader's.

// sourceWorker is one source worker: its parts (splitter, pre-region
// instances, error policy, CPU account) and the state of the block it
// reads. The worker's goroutine owns it; the exchange's lists (workers,
// current, reading…) say where it is, under x.mu.
type sourceWorker struct {
	r    *run
	x    *exchange
	id   int
	sp   *splitter
	pre  *instSet
	errs *core.ErrorPolicy
	cpu  *stageCPU
	// chain is the pre-region chain into sp; logic is the epoch of the
	// logic its instances run (the updates of the blocks before the one
	// it reads, update.go).
	chain *core.Chain
	logic logic.Follower

	// The block being read, written per batch (the worker has cache
	// lines of its own: newSourceWorker). cur is the block; read counts
	// its records emit has taken (ReadBlock's records, before event time
	// and the pre-region operators drop any), skip those to drop (a
	// restore inside cur), before those before the batch being taken.
	// in is the worker's intake of source batches (intake.go), in.maxT
	// the block's largest event time so far (ns, core.NoTime: none yet);
	// between is betweenPieces, bound once.
	cur                int
	read, skip, before int64
	in                 intake
	between            func(rest int) error
}

// newSourceWorker makes source worker id len(x.workers) with rings to n
// channels and adds it to x (x.mu held once the run started): its
// splitter, pre-region instances, error policy and CPU account. It does
// not start it.
func newSourceWorker(x *exchange, table *kvstate.Table, n int) (*sourceWorker, error) {
	r := x.r
	id := len(x.workers)
	rings := make([]*ring.SPSC[*core.Batch], n)
	for c := range rings {
		var err error
		if rings[c], err = r.newRing(); err != nil {
			return nil, err
		}
	}
	sp, err := newSplitter(rings, x.splitIn, r.job.Region, r.maxChannels)
	if err != nil {
		return nil, err
	}
	sp.table = table // one table, read-only, shared by the workers
	sp.force = r.opt.forcePieces
	if lg := r.job.BatchLinger; lg > 0 { // only when asked for (Job.BatchLinger)
		sp.gatherOn(lg, r.clock())
		sp.flat = true
	}
	// The worker writes its block's state per batch: on lines of its own,
	// not beside another worker's or a channel's hot data (core.OwnLines).
	w := &core.OwnLines[sourceWorker](1)[0]
	*w = sourceWorker{r: r, x: x, id: id, sp: sp, errs: r.job.Errors.Deferred(), cpu: r.newReplicatedStageCPU("source", id), logic: r.logic.Follow(logic.Pre)}
	w.in = intake{r: r, cpu: w.cpu, errs: w.errs, ahead: r.newAheadCheck(), maxT: core.NoTime}
	w.between = w.betweenPieces
	sp.errs, sp.letters = w.errs, &r.letters
	sp.cpu = w.cpu
	if sp.db = r.newDebloater(); sp.db != nil {
		sp.db.shared, sp.db.starved = x.limits, x.starved
		sp.db.countPieces(x.pieces)
	}
	if w.pre, err = r.instantiate(r.preDefs, core.Env{Channel: id, Channels: id + 1, Errors: w.errs}, r.preCounters); err != nil {
		return nil, err
	}
	x.workers = append(x.workers, w)
	x.current = append(x.current, -1)
	x.reading = append(x.reading, false)
	x.routed = append(x.routed, 0)
	x.retired = append(x.retired, false)
	return w, nil
}

// launchWorkers starts the first routing's source workers.
func (x *exchange) launchWorkers() {
	for _, w := range x.workers {
		w.start()
	}
}

// start starts the worker's goroutine, which runs loop.
func (w *sourceWorker) start() {
	r := w.r
	r.wg.Add(1)
	r.placer.Start("source", w.id, func() {
		defer r.wg.Done()
		defer r.recoverStage("source", w.id)
		w.cpu.begin()
		defer w.cpu.end()
		w.loop()
	})
}

// loop reads the blocks the routings give the worker, in order, and
// feeds each through event time, the pre-region operators and its
// splitter (emit). Between two batches it sends a barrier requested in
// its block (midBarrier). Restored inside a block, it drops that block's
// records before the position, reading them (a Parquet row group or a
// text block cannot be entered in the middle; a generator's block is
// cheap to make), with its error policy muted: their malformed records
// were handled before the checkpoint. At the end of the input it closes
// its rings; on an error it fails the run.
func (w *sourceWorker) loop() {
	r, x, sp := w.r, w.x, w.sp
	w.chain = chainOf(w.pre.insts, sp.route)
	emit := w.emit // ReadBlock's callback, bound once
	err := r.ctx.Err()
	for b := -1; err == nil; {
		if b, err = w.beginNext(b); err != nil || b < 0 {
			break
		}
		if x.failedBefore(b) {
			return // the worker of that block fails the job
		}
		base := uint64(b) << blockSeqBits
		sp.seq, w.in.maxT = base, core.NoTime
		w.cur, w.read, w.skip = b, 0, 0
		if sp.db != nil {
			sp.db.seed(sp.rings)
		}
		if b == x.startBlock && x.startSkip > 0 {
			w.skip = x.startSkip
			w.errs.Mute()
		}
		if x.midReq.Load() == int64(b) { // requested before the block's first record
			if err = w.midBarrier(w.skip, 0, core.NoTime); err != nil {
				break
			}
		}
		if err = x.src.ReadBlock(r.ctx, b, w.errs, emit); err != nil {
			if r.ctx.Err() == nil && !errors.Is(err, ring.ErrCanceled) && !errors.Is(err, ring.ErrClosed) {
				if !x.blockFailed(b, err) {
					return // an earlier block failed, or the run stopped
				}
				// The first bad record of the source workers: the channels'
				// failures on earlier records come first (failure.go).
				if r.sourceFailed(err, sp.seq, func() error { return sp.pulseAll(sp.seq) }) {
					return
				}
			}
			break
		}
		if w.read < w.skip {
			err = fmt.Errorf("restore: block %d ended %d records before the checkpoint's position", b, w.skip-w.read)
			break
		}
		if err = w.endBlock(); err != nil {
			break
		}
		// Dead letters met after the block's last batch go to the merger
		// before the block-end markers (letters.go).
		r.letters.add(w.errs, sp.seq)
		x.blockDone(b)
		if sp.seq-base >= 1<<blockSeqBits-1 {
			err = fmt.Errorf("source block %d holds more than %d records and markers", b, uint64(1)<<blockSeqBits-1)
			break
		}
		for c := range sp.rings {
			mk := core.NewMarker(core.Pulse)
			mk.Control, mk.Watermark, mk.MarkSeq = blockEnd, w.in.maxT, sp.seq
			if err = sp.push(c, mk); err != nil {
				break
			}
		}
	}
	if err == nil {
		for _, rg := range sp.rings {
			rg.Close()
		}
		return
	}
	if errors.Is(err, io.EOF) { // a source must not end a block early with EOF
		err = fmt.Errorf("source worker %d: %w", w.id, err)
	}
	r.fail(err)
	r.cancelRings()
}

// emit takes source batch b of block cur (ReadBlock's callback; b is the
// worker's from here): it drops the records a restore skips, takes the
// rest in (intake.take: event time, the pre-region chain into the
// splitter, in pieces when the splitter cuts them, cut.go), then routes
// the block's watermark candidate, settles what the splitter gathers, and
// sends a barrier requested in cur (midBarrier). Its error ends the
// block's read.
func (w *sourceWorker) emit(b *core.Batch) error {
	sp := w.sp
	w.before = w.read // the block's records before this batch
	if w.read < w.skip {
		k := min(int64(b.Len), w.skip-w.read)
		w.read += k
		if w.read == w.skip {
			w.errs.Unmute()
		}
		if k == int64(b.Len) {
			b.Release()
			return nil
		}
		for i := int(k); i < b.Len; i++ { // a checkpoint between two pieces (cut.go)
			b.Move(i-int(k), i)
		}
		b.Truncate(b.Len - int(k))
	}
	w.read += int64(b.Len)
	stamp, ok, err := w.in.take(b, sp, w.chain.Push, w.between)
	if err != nil || !ok {
		return err
	}
	if w.in.maxT != core.NoTime {
		// The watermark candidate: pre-region operators are stateless
		// (their Watermark does nothing), so it goes to the splitter
		// directly.
		mk := core.NewMarker(core.Watermark)
		mk.Watermark, mk.Stamp = w.in.maxT, stamp
		if err := sp.route(mk); err != nil {
			return err
		}
	}
	if sp.gather != nil {
		// What is gathered and linger old goes now (batching.go);
		// the rest stays for the next batch, a marker or the block's
		// end, or for a channel that runs out to take.
		if err := sp.settle(); err != nil {
			return err
		}
	}
	if w.barrierDue() {
		return w.midBarrier(w.read, 0, core.NoTime)
	}
	return nil
}

// betweenPieces is what the worker does between two pieces of a source
// batch (pushPieces), rest records of it still to come: send a barrier
// requested in cur or due by the clock (midBarrier), when the batch's
// records are as read (in.exact), so that its position counts them.
func (w *sourceWorker) betweenPieces(rest int) error {
	if !w.in.exact || !w.barrierDue() {
		return nil
	}
	n := w.read - int64(rest)
	return w.midBarrier(n, n-w.before, w.in.maxT)
}

// beginNext is what the worker does before reading its next block after
// block after: find it (−1: none left, the worker stops), note it, take
// up the routing for it, send the barrier placed before it if there is
// one, and place the next barrier (a checkpoint is due) or change (a
// control request, the region's own controller or the balancer asks for
// one).
func (w *sourceWorker) beginNext(after int) (int, error) {
	r, x := w.r, w.x
	x.mu.Lock()
	b := x.nextFor(w.id, after, x.startBlock)
	if b < 0 {
		x.retired[w.id] = true // no later routing may give it blocks
		x.mu.Unlock()
		return -1, nil
	}
	x.current[w.id], x.reading[w.id] = b, true
	if int64(b) > x.started.Load() {
		x.started.Store(int64(b))
	}
	var send *barrierInfo
	var upd *update
	if x.pending == b {
		send, x.pending, x.pendingInfo = x.pendingInfo, -1, nil
		if u, ok := r.logic.At(b); ok && send == nil {
			upd = r.updates[u.Epoch-1] // a change of logic took the slot
		}
	}
	// The changes of logic of the blocks up to b (update.go), which the
	// worker meets before reading b.
	var swaps []*update
	for _, u := range r.logic.Due(nil, &w.logic, b) {
		swaps = append(swaps, r.updates[u.Epoch-1])
	}
	k := configIndex(x.configs, b)
	changed := k != x.routed[w.id]
	x.routed[w.id] = k
	cfg := x.configs[k]
	var err error
	// A checkpoint due (counting block starts for EveryBatches) is
	// requested inside a block (midBarrier); changes are placed at the
	// next block no worker has started, one pending at a time, never at
	// a routing's first block (the channels' Reconfig marker has that
	// sequence number).
	if t := x.barrierBlock(); r.ck != nil && send == nil && t >= 0 && r.ck.due() {
		x.requestBarrier(t)
	} else if next := slices.Max(x.current) + 1; x.pending < 0 && send == nil && upd == nil && next < x.blocks() && next > x.configs[len(x.configs)-1].block {
		err = r.serveChanges(blockPoint{x, next}, false)
	}
	if !r.logic.Ended() && slices.Max(x.current)+1 >= x.blocks() {
		r.endUpdates() // no block left to place an update before
	}
	x.mu.Unlock()
	if err != nil {
		return -1, err
	}
	if changed {
		p := slices.Index(cfg.ids, w.id)
		w.sp.use(cfg.rings[p], cfg.heldAt(p), cfg.table)
	}
	for _, u := range swaps {
		swapped, err := meet(&w.logic, w.pre.insts, u, core.Env{Channel: w.id, Channels: w.id + 1, Errors: w.errs})
		if err != nil {
			return -1, err
		}
		if swapped {
			w.chain = chainOf(w.pre.insts, w.sp.route)
		}
	}
	if upd != nil {
		// The sync point of a change of logic: before block b's records.
		w.sp.seq = uint64(b)<<blockSeqBits - 1
		m := core.NewMarker(core.Update)
		m.Control, m.Stamp = upd, time.Now().UnixNano()
		return b, w.sp.route(m)
	}
	if send == nil {
		return b, nil
	}
	w.sp.seq = uint64(b)<<blockSeqBits - 1 // the barrier's: just before block b's records
	return b, w.sp.route(barrierMarker(send, time.Now().UnixNano()))
}

// midBarrier is what the worker does between two batches of block cur, n
// records of it read (ReadBlock's records, before event time and the
// pre-region operators drop any), when a barrier is requested in cur or
// a checkpoint may be due by the clock: request one if it is (in the
// smallest block being read, maybe cur), and send the one requested in
// cur, at (cur, n).
//
// Why a barrier there is a consistent cut, whatever M and N: the
// channels take blocks in block order and each block's stream from its
// worker's FIFO ring, so every channel meets the barrier after every
// record of blocks < cur and the first n of cur, and before the rest of
// cur and every record of blocks > cur, however far their workers have
// read: one point of the sequential order, the same in every channel,
// which the merger aligns as any marker. The checkpoint records (cur, n)
// and the state the channels hold there; a restore starts the workers at
// cur, and its worker drops its first n records (loop).
//
// Between two pieces of a source batch (cut.go), k is how many of the
// batch's records come before the barrier (0 at a batch's end), and
// pieceMax the largest event time of the block up to the batch's end
// (the watermark candidate the batch will send), which the checkpoint
// records as the watermark generator's state: core.NoTime at a batch's
// end.
func (w *sourceWorker) midBarrier(n, k, pieceMax int64) error {
	r, x, b := w.r, w.x, w.cur
	x.mu.Lock()
	if r.ctl.queued.Load() != 0 {
		r.placeCheckpoint()
	}
	if x.mid != b && r.ck != nil && r.ck.dueByClock() {
		if t := x.barrierBlock(); t >= 0 {
			x.requestBarrier(t)
		}
	}
	info := x.takeBarrier(b)
	x.mu.Unlock()
	if info == nil {
		return nil
	}
	info.batchRecords = k
	return w.sendBarrier(info, b, n, pieceMax)
}

// barrierDue is whether the worker should look for a barrier to send in
// block cur (midBarrier): one is requested in cur, or a checkpoint may
// be due by the clock, or the control plane has a request. An atomic
// load or two per batch.
func (w *sourceWorker) barrierDue() bool {
	r := w.r
	return w.x.midReq.Load() == int64(w.cur) || r.ck != nil && (r.ck.dueByClock() || r.ctl.queued.Load() != 0)
}

// endBlock is what the worker does when it has read block cur to its
// end: it is no longer reading cur, and sends the barrier requested in
// cur if it has not yet; that barrier is after every record of cur, so
// its position is the start of block cur+1.
func (w *sourceWorker) endBlock() error {
	x := w.x
	x.mu.Lock()
	x.reading[w.id] = false
	info := x.takeBarrier(w.cur)
	x.mu.Unlock()
	if info == nil {
		return nil
	}
	return w.sendBarrier(info, w.cur+1, 0, core.NoTime)
}

// sendBarrier sends checkpoint info's barrier at position (block b, n
// records of it), after everything the worker has routed; pieceMax as
// midBarrier's.
func (w *sourceWorker) sendBarrier(info *barrierInfo, b int, n, pieceMax int64) error {
	r, x := w.r, w.x
	info.block, info.record = int64(b), n
	info.inPiece, info.pieceMax = pieceMax != core.NoTime, pieceMax
	if _, counted := x.src.(core.BlockStarts); counted || b == 0 {
		info.position = x.recordsBefore(b) + n
	}
	req, wait := info.req, info.wait // info belongs to the checkpoint once routed
	err := w.sp.route(barrierMarker(info, time.Now().UnixNano()))
	if req != nil {
		out := Outcome{Epoch: info.epoch, Seq: w.sp.seq, Position: -1, Block: int64(b), Record: n}
		if r.knowsPositions() || b == 0 {
			out.Position = x.recordsBefore(b) + n
		}
		r.answer(req, out, wait, err)
	}
	return err
}

// Failures in block order: what the workers share, under x.lettersMu.

// blockDone notes that block b was read to its end (its dead letters
// handed to the merger's queue) and moves nextBlock over every finished
// block, in block order, for blockFailed.
func (x *exchange) blockDone(b int) {
	x.lettersMu.Lock()
	defer x.lettersMu.Unlock()
	x.done[b] = true
	defer x.turn.Broadcast()
	for x.done[x.nextBlock] {
		delete(x.done, x.nextBlock)
		x.nextBlock++
	}
}

// blockFailed is what the worker reading block b does when the read fails
// with err: wait until every block before b is read to its end (its dead
// letters handed over) or an earlier block failed too, and say whether err
// is the job's error (b is the first failed block). A cancelled run does
// not wait.
func (x *exchange) blockFailed(b int, err error) bool {
	ctx := x.r.ctx
	x.lettersMu.Lock()
	defer x.lettersMu.Unlock()
	if x.failBlock < 0 || b < x.failBlock {
		x.failBlock = b
	}
	stop := context.AfterFunc(ctx, func() {
		x.lettersMu.Lock()
		x.turn.Broadcast()
		x.lettersMu.Unlock()
	})
	defer stop()
	for x.nextBlock < b && x.failBlock == b && ctx.Err() == nil {
		x.turn.Wait()
	}
	first := x.failBlock == b && ctx.Err() == nil
	x.turn.Broadcast()
	return first
}

// failedBefore says whether a block before b has failed: a worker stops
// instead of reading b.
func (x *exchange) failedBefore(b int) bool {
	x.lettersMu.Lock()
	defer x.lettersMu.Unlock()
	return x.failBlock >= 0 && x.failBlock < b
}
