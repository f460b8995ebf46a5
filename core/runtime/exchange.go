package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	goruntime "runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"streamd/core"
	"streamd/kvstate"
	"streamd/ring"
	"streamd/snapshot"
)

// Parallel sources and the M×N exchange (docs/ARCHITECTURE.md, "Parallel
// sources and the M×N exchange").
//
// A core.Splittable source is read by M source workers: block b by worker
// b mod M. Each worker runs event time, its own instances of the
// pre-region operators and its own splitter, whose sequence numbers for
// block b start at b<<32, so that sequence order is input order whatever M
// is. Worker w pushes to channel c on ring (w, c) only: M×N SPSC rings.
//
// On each ring, per block, a worker sends the block's records for c, after
// every source batch a watermark candidate (a Watermark marker whose
// Watermark field is the block's largest event time so far, not a
// watermark), and at the block's end a block-end marker (a Pulse whose
// Control is blockEnd, Watermark the block's largest event time, NoTime if
// none). A channel reads blocks in block order (blockInput), so it sees
// the records of its key groups in input order, and turns each candidate
// into the watermark the sequential reader would have emitted at that
// point: max(largest event time of the blocks before, the candidate) −
// bound − 1, forwarded only when it rises. Every channel sees every
// candidate at the same sequence number and computes the same watermark,
// so window firings, late records and the merger's alignment are the
// sequential reader's. After the last block a channel makes the End
// marker itself, at sequence number blocks<<32 in every channel.

// blockEnd is the Control of the marker that ends a block on a ring.
var blockEnd = &struct{ name string }{"block end"}

// blockSeqBits is the room a block has in the sequence space: record and
// marker i of block b get sequence number b<<blockSeqBits + i.
const blockSeqBits = 32

// input is what a channel reads: one ring (the single source stage), or
// the M rings of the exchange taken in block order.
type input interface {
	pop(sc *stageCPU) (*core.Batch, error)
	Cancel()
	Len() int
}

// ringInput is a channel's one input ring.
type ringInput struct{ *ring.SPSC[*core.Batch] }

func (in ringInput) pop(sc *stageCPU) (*core.Batch, error) { return sc.pop(in.SPSC) }

// blockInput is channel c's side of the exchange: ring w carries the
// blocks worker w reads, and blocks are taken in block order. Only the
// channel's goroutine calls pop; Cancel and Len are safe from anywhere.
type blockInput struct {
	rings   []*ring.SPSC[*core.Batch] // by worker
	blocks  int
	bound   int64 // max out-of-orderness, ns
	b       int   // the block being read
	prevMax int64 // largest event time of blocks < b
	lastWM  int64 // last watermark forwarded
	ended   bool
	channel int
}

func newBlockInput(rings []*ring.SPSC[*core.Batch], blocks int, bound, startWM int64) *blockInput {
	return &blockInput{rings: rings, blocks: blocks, bound: bound, prevMax: core.NoTime, lastWM: startWM}
}

func (in *blockInput) pop(sc *stageCPU) (*core.Batch, error) {
	for {
		if in.b == in.blocks {
			if in.ended {
				return nil, ring.ErrClosed
			}
			in.ended = true
			end := core.NewMarker(core.End)
			end.MarkSeq, end.Stamp = uint64(in.blocks)<<blockSeqBits, time.Now().UnixNano()
			return end, nil
		}
		bt, err := sc.pop(in.rings[in.b%len(in.rings)])
		if err != nil {
			return nil, err
		}
		switch bt.Kind {
		case core.Pulse:
			if bt.Control == blockEnd {
				in.prevMax = max(in.prevMax, bt.Watermark)
				in.b++
				bt.Release()
				continue
			}
		case core.Barrier:
			// Every channel is at the same point (all blocks before the
			// barrier's done): channel 0 records the watermark state.
			if bi := barrierOf(bt); bi != nil && in.channel == 0 {
				bi.maxTime, bi.wm = in.prevMax, in.lastWM
			}
		case core.Reconfig:
			// Likewise for a change of the channel count: the channels it
			// adds start from channel 0's watermark state here.
			if rc := reconfOf(bt); rc != nil && in.channel == 0 {
				rc.publishWatermark(in.prevMax, in.lastWM)
			}
		case core.Watermark:
			if wm := max(in.prevMax, bt.Watermark) - in.bound - 1; wm > in.lastWM {
				in.lastWM, bt.Watermark = wm, wm
			} else {
				// No new watermark here: the point still tells the merger
				// how far this channel is.
				bt.Kind, bt.Watermark = core.Pulse, 0
			}
		}
		return bt, nil
	}
}

func (in *blockInput) Cancel() {
	for _, rg := range in.rings {
		rg.Cancel()
	}
}

func (in *blockInput) Len() int {
	n := 0
	for _, rg := range in.rings {
		n += rg.Len()
	}
	return n
}

// exchange is the parallel-source side of a run: M workers, each with its
// splitter (rings (w, 0..N-1)) and pre-region instances.
type exchange struct {
	src       core.Splittable
	splitters []*splitter
	pre       []*instSet
	cpus      []*stageCPU

	// Barriers (checkpoints): a worker starting a block decides, under mu,
	// whether a checkpoint is due, and places it at block pending =
	// 1 + the largest block any worker has started (current), which no
	// worker has started yet; the worker of that block sends it when it
	// gets there, before the block.
	//
	// Live changes of the channel count are placed the same way (one
	// barrier or change pending at a time): a change placed before block
	// B makes a routing configuration that every worker takes up at its
	// first block ≥ B, and the worker of block B sends the Reconfig marker
	// to the channels of the configuration before, on their rings, before
	// block B's records (rescale.go, "Live changes with source workers").
	mu            sync.Mutex
	current       []int // by worker: the block it reads (or read last)
	pending       int   // the block the next barrier or change goes before; -1: none
	pendingInfo   *barrierInfo
	pendingChange *reconf
	configs       []*routing // in block order; the first from block 0
	routed        []int      // by worker: the index in configs its splitter routes under

	// Dead letters: each worker's pre-region operators and block reads
	// report bad records to its own deferred policy (errs[w]); its
	// splitter hands them to the merger's queue (letters.go) before it
	// pushes anything after them, tagged with the last sequence number
	// they can precede, and the merger writes all dead letters — the
	// workers' and the channels' — in input order.
	errs      []*core.ErrorPolicy
	lettersMu sync.Mutex
	nextBlock int          // the first block not yet read to its end
	done      map[int]bool // blocks read to their end, beyond nextBlock
	// A block whose read fails (a bad record under on_error: fail, a
	// pre-region operator's error) fails the job only when every block
	// before it was read without failing: the error is the one reader's,
	// the first in input order, whatever M. failBlock is the smallest
	// failed block (-1: none); turn is broadcast as nextBlock moves.
	failBlock int
	turn      *sync.Cond // on lettersMu
}

// routing is how the workers route from a block on: the channel count,
// per worker the rings to each channel, and the key-group table (nil for a
// stateless region).
type routing struct {
	block int
	rings [][]*ring.SPSC[*core.Batch] // [worker][channel]
	table *kvstate.Table
	// change is the reconfiguration that made it (nil for the first).
	change *reconf
}

// sourceWorkers is how many source workers read the job's source: 0 for
// the single source stage (no region, a source that cannot be split, or a
// restore of a record position that no block start matches:
// resumesAtRecord), otherwise Job.SourceParallelism (0: as many as the
// cores allow beside the channels — the most an elastic region may use —,
// the merger and one core to spare), at least one, at most one per block.
func sourceWorkers(job *Job, cores int) int {
	sp, ok := job.Source.(core.Splittable)
	reg := job.Region
	if !ok || reg == nil || job.SourceParallelism < 0 {
		return 0
	}
	blocks := sp.Blocks()
	if blocks == 0 {
		return 0
	}
	if cp := job.Checkpoint; cp != nil && cp.Restore != nil && resumesAtRecord(&cp.Restore.Meta, sp) {
		return 0
	}
	if blocks < 0 {
		blocks = math.MaxInt
	}
	m := job.SourceParallelism
	if m == 0 {
		// A core each beside the channels and the merger, and one to spare
		// for the Go runtime and the OS (CorePlacer pins only then).
		m = cores - max(reg.Channels, reg.MaxChannels) - 2
	}
	return max(1, min(m, blocks))
}

// SourceWorkers is how many source workers Run will start for job on this
// machine (0: the single source stage), for placement.
func SourceWorkers(job *Job) int { return sourceWorkers(job, goruntime.NumCPU()) }

// buildExchange makes the M×N rings, the workers' splitters and their
// pre-region instances.
func (r *run) buildExchange(m int, splitIn *core.Schema) error {
	reg := r.job.Region
	n := reg.Channels
	x := &exchange{src: r.job.Source.(core.Splittable), pending: -1, nextBlock: r.startBlock, done: map[int]bool{}, failBlock: -1}
	x.turn = sync.NewCond(&x.lettersMu)
	first := &routing{block: r.startBlock}
	for w := range m {
		rings := make([]*ring.SPSC[*core.Batch], n)
		for c := range rings {
			var err error
			if rings[c], err = r.newRing(); err != nil {
				return err
			}
		}
		sp, err := newSplitter(rings, splitIn, reg, r.maxChannels)
		if err != nil {
			return err
		}
		first.rings = append(first.rings, rings)
		errs := r.job.Errors.Deferred()
		sp.errs, sp.letters = errs, &r.letters
		sc := r.newStageCPU("source", w)
		sc.replicated = true
		sp.cpu = sc
		pre, err := r.instantiate(r.job.Pre, core.Env{Channel: w, Channels: m, Errors: errs}, r.preCounters)
		if err != nil {
			return err
		}
		x.errs = append(x.errs, errs)
		x.splitters = append(x.splitters, sp)
		x.pre = append(x.pre, pre)
		x.cpus = append(x.cpus, sc)
		x.current = append(x.current, firstBlock(r.startBlock, w, m)-m)
	}
	first.table = x.splitters[0].table
	for _, sp := range x.splitters {
		sp.table = first.table // one table, read-only, shared by the workers
	}
	x.configs, x.routed = []*routing{first}, make([]int, m)
	r.x = x
	r.initialTable = first.table
	r.splitters = x.splitters
	return r.buildScaler()
}

// firstBlock is worker w's first block of m workers when reading starts at
// block start: the smallest b ≥ start with b mod m = w.
func firstBlock(start, w, m int) int {
	return start + ((w-start)%m+m)%m
}

// restoredBlock is the block a checkpoint's workers resume at. A checkpoint
// of the single source stage (a position in records, no block) fits when
// that position is where a block starts (core.BlockStarts).
func restoredBlock(meta *snapshot.Metadata, src core.Splittable) (int, error) {
	if b, ok := meta.Sources["block"]; ok {
		return int(b), nil
	}
	pos := meta.Sources["source"]
	if pos == 0 {
		return 0, nil
	}
	if bs, ok := src.(core.BlockStarts); ok && src.Blocks() != 0 {
		n := src.Blocks()
		if n < 0 { // unbounded: every block holds a record at least
			n = int(min(pos, math.MaxInt-1)) + 1
		}
		// The first block starting at or after pos.
		b := sort.Search(n, func(b int) bool { return bs.BlockStart(b) >= pos })
		if b < n && bs.BlockStart(b) == pos {
			return b, nil
		}
	}
	return 0, fmt.Errorf("%w: it was taken with one source stage (a rate-limited generator, a region whose channel count changes) at record %d, inside a block, and this job reads its source by blocks: resume it with the settings it was taken with", ErrCheckpointMismatch, pos)
}

// resumesAtRecord says whether checkpoint meta was taken by the single
// source stage (a count of records, no block) inside the input of a
// source that cannot say which block starts there (no core.BlockStarts:
// CSV, JSON lines). Such a restore runs with the single source stage,
// which skips that many records; its output is the same (Next's batches
// are the blocks').
func resumesAtRecord(meta *snapshot.Metadata, src core.Splittable) bool {
	if _, ok := meta.Sources["block"]; ok || meta.Sources["source"] == 0 {
		return false
	}
	_, ok := src.(core.BlockStarts)
	return !ok
}

// unknownPosition refuses a checkpoint taken by source workers before
// block b of a source that does not know how many records come before a
// block (no core.BlockStarts: CSV and JSON lines, whose blocks are byte
// ranges) when the job resumes with the single source stage: that stage
// skips records, and the checkpoint does not say how many.
func unknownPosition(b int64) error {
	return fmt.Errorf("%w: it was taken by source workers before block %d of a source that does not count the records before a block (CSV, JSON lines), and this job reads its source with one source stage (no region, or a region whose channel count changes): resume it with the settings it was taken with", ErrCheckpointMismatch, b)
}

// input is channel c's side of the exchange; the restore's watermark
// state when r resumes from a checkpoint.
func (r *run) input(c int, bound int64) *blockInput {
	x := r.x
	rings := make([]*ring.SPSC[*core.Batch], len(x.splitters))
	for w, sp := range x.splitters {
		rings[w] = sp.rings[c]
	}
	in := newBlockInput(rings, x.blocks(), bound, r.startWM)
	in.b, in.channel = r.startBlock, c
	if r.restore != nil {
		fmt.Sscan(r.restore.Meta.Extra["max_event_time"], &in.prevMax)
	}
	return in
}

// beginBlock is what worker w does before reading block b: note it, take
// up the routing for b, send the barrier or the Reconfig marker placed
// before b if there is one, and place the next barrier (a checkpoint is
// due) or change of the channel count (the scaler asks for one).
func (r *run) beginBlock(w, b int) error {
	x := r.x
	x.mu.Lock()
	x.current[w] = b
	var send *barrierInfo
	var change *reconf
	if x.pending == b {
		send, change = x.pendingInfo, x.pendingChange
		x.pending, x.pendingInfo, x.pendingChange = -1, nil, nil
	}
	k := x.routed[w]
	for k+1 < len(x.configs) && x.configs[k+1].block <= b {
		k++
	}
	before, now := x.configs[max(0, k-1)], x.configs[k]
	changed := k != x.routed[w]
	x.routed[w] = k
	var err error
	if x.pending < 0 && send == nil && change == nil {
		if next := slices.Max(x.current) + 1; next < x.blocks() {
			switch {
			case r.ck != nil && r.ck.due():
				r.ck.epoch++
				r.ck.begin(r.ck.epoch)
				x.pending = next
				x.pendingInfo = &barrierInfo{epoch: r.ck.epoch, position: x.recordsBefore(next), block: int64(next), started: time.Now()}
			case r.scaler != nil:
				if n := r.scaler.next(r); n > 0 && n != int(r.curChans.Load()) {
					err = r.placeChange(n, next)
				}
			}
		}
	}
	x.mu.Unlock()
	if err != nil {
		return err
	}
	sp := x.splitters[w]
	if change != nil {
		// The marker goes to the channels of the routing before the
		// change, on this worker's rings to them.
		sp.use(before.rings[w], before.table)
		change.synced.Store(time.Now().UnixNano())
		sp.seq = change.seq - 1
		m := core.NewMarker(core.Reconfig)
		m.Control, m.Stamp = change, time.Now().UnixNano()
		if err := sp.route(m); err != nil {
			return err
		}
	}
	if changed || change != nil {
		sp.use(now.rings[w], now.table)
	}
	if send == nil {
		return nil
	}
	sp.seq = uint64(b)<<blockSeqBits - 1 // the barrier's: just before block b's records
	m := core.NewMarker(core.Barrier)
	m.Epoch, m.Stamp, m.Control = send.epoch, time.Now().UnixNano(), send
	return sp.route(m)
}

// placeChange places a change to n channels before block b, which no
// worker has started (x.mu held): prepare (rescale.go) — the new routing,
// the key groups that move, the rings and channels it adds, which wait for
// their key groups and for the watermark state at b (channel 0 publishes
// it when it reaches the marker).
func (r *run) placeChange(n, b int) error {
	x := r.x
	if n < 1 || n > r.maxChannels {
		return fmt.Errorf("rescale to %d channels: allowed 1..%d", n, r.maxChannels)
	}
	last := x.configs[len(x.configs)-1]
	from := len(last.rings[0])
	m := len(x.splitters)
	rc := newReconf(uint64(b)<<blockSeqBits, from, n, m+1)
	rc.watermark = make(chan struct{})
	next := &routing{block: b, change: rc}
	if last.table != nil {
		next.table = kvstate.NewTable(last.table.Groups(), n)
		rc.plan(last.table, next.table)
	}
	for w := range m {
		next.rings = append(next.rings, slices.Clone(last.rings[w][:min(from, n)]))
	}
	rc.outs = slices.Clone(r.mergerOuts[:min(from, n)])
	for c := from; c < n; c++ {
		rings := make([]*ring.SPSC[*core.Batch], m)
		for w := range m {
			var err error
			if rings[w], err = r.newRing(); err != nil {
				return err
			}
			next.rings[w] = append(next.rings[w], rings[w])
		}
		out, err := r.newRing()
		if err != nil {
			return err
		}
		rc.outs = append(rc.outs, out)
		in := newBlockInput(rings, x.blocks(), r.job.EventTime.MaxOutOfOrder, core.NoTime)
		in.b, in.channel = b, c
		if err := r.startChannel(c, n, in, out, core.NoTime, rc); err != nil {
			return err
		}
	}
	x.configs = append(x.configs, next)
	x.pending, x.pendingChange = b, rc
	r.mergerOuts = rc.outs
	r.changed(n)
	return nil
}

// blockDone notes that block b was read to its end (its dead letters
// handed to the merger's queue) and moves nextBlock over every finished
// block, in block order, for blockFailed.
func (r *run) blockDone(b int) {
	x := r.x
	x.lettersMu.Lock()
	defer x.lettersMu.Unlock()
	x.done[b] = true
	defer x.turn.Broadcast()
	for x.done[x.nextBlock] {
		delete(x.done, x.nextBlock)
		x.nextBlock++
	}
}

// blockFailed is what worker reading block b does when the read fails with
// err: wait until every block before b is read to its end (its dead letters
// handed over) or an earlier block failed too, and say whether err is the
// job's error (b is the first failed block). A cancelled run does not
// wait.
func (r *run) blockFailed(b int, err error) bool {
	x := r.x
	x.lettersMu.Lock()
	defer x.lettersMu.Unlock()
	if x.failBlock < 0 || b < x.failBlock {
		x.failBlock = b
	}
	stop := context.AfterFunc(r.ctx, func() {
		x.lettersMu.Lock()
		x.turn.Broadcast()
		x.lettersMu.Unlock()
	})
	defer stop()
	for x.nextBlock < b && x.failBlock == b && r.ctx.Err() == nil {
		x.turn.Wait()
	}
	first := x.failBlock == b && r.ctx.Err() == nil
	x.turn.Broadcast()
	return first
}

// failedBefore says whether a block before b has failed: a worker stops
// instead of reading b.
func (r *run) failedBefore(b int) bool {
	x := r.x
	x.lettersMu.Lock()
	defer x.lettersMu.Unlock()
	return x.failBlock >= 0 && x.failBlock < b
}

// recordsBefore is the input position (records read) at the start of
// block b, when the source knows it (core.BlockStarts), else 0.
func (x *exchange) recordsBefore(b int) int64 {
	if bs, ok := x.src.(core.BlockStarts); ok {
		return bs.BlockStart(b)
	}
	return 0
}

// blocks is the source's block count, math.MaxInt when unbounded.
func (x *exchange) blocks() int {
	if n := x.src.Blocks(); n >= 0 {
		return n
	}
	return math.MaxInt
}

// launchWorkers starts the M source workers.
func (r *run) launchWorkers() {
	m := len(r.x.splitters)
	for w := range m {
		r.wg.Add(1)
		r.placer.Start("source", w, func() {
			defer r.wg.Done()
			defer r.recoverStage("source", w)
			sc := r.x.cpus[w]
			sc.begin()
			defer sc.end()
			r.sourceWorker(w, m)
		})
	}
}

// sourceWorker reads blocks w, w+M, w+2M … and feeds each through event
// time, the pre-region operators and its splitter.
func (r *run) sourceWorker(w, m int) {
	sp := r.x.splitters[w]
	pre := chainOf(r.x.pre[w].insts, sp.route)
	maxT := int64(core.NoTime)
	sc := r.x.cpus[w]
	emit := func(b *core.Batch) error {
		maxT = r.admit(b, sc, maxT)
		stamp := b.Stamp
		if err := pre.Push(b); err != nil {
			return err
		}
		if maxT == core.NoTime {
			return nil
		}
		// The watermark candidate: pre-region operators are stateless
		// (their Watermark does nothing), so it goes to the splitter
		// directly.
		mk := core.NewMarker(core.Watermark)
		mk.Watermark, mk.Stamp = maxT, stamp
		return sp.route(mk)
	}
	err := r.ctx.Err()
	for b := firstBlock(r.startBlock, w, m); b < r.x.blocks() && err == nil; b += m {
		if r.failedBefore(b) {
			return // the worker of that block fails the job
		}
		if err = r.beginBlock(w, b); err != nil {
			break
		}
		base := uint64(b) << blockSeqBits
		sp.seq, maxT = base, core.NoTime
		if err = r.x.src.ReadBlock(r.ctx, b, r.x.errs[w], emit); err != nil {
			if r.ctx.Err() == nil && !errors.Is(err, ring.ErrCanceled) && !errors.Is(err, ring.ErrClosed) && !r.blockFailed(b, err) {
				return // an earlier block failed, or the run stopped
			}
			break
		}
		// Dead letters met after the block's last batch go to the merger
		// before the block-end markers (letters.go).
		r.letters.add(r.x.errs[w], sp.seq)
		r.blockDone(b)
		if sp.seq-base >= 1<<blockSeqBits-1 {
			err = fmt.Errorf("source block %d holds more than %d records and markers", b, uint64(1)<<blockSeqBits-1)
			break
		}
		for c := range sp.rings {
			mk := core.NewMarker(core.Pulse)
			mk.Control, mk.Watermark, mk.MarkSeq = blockEnd, maxT, sp.seq
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
		err = fmt.Errorf("source worker %d: %w", w, err)
	}
	r.fail(err)
	r.cancelRings()
}
