package runtime

import (
	"cmp"
	"context"
	"fmt"
	"math"
	goruntime "runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"streamd/core"
	"streamd/core/runtime/internal/endinput"
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

// blockInput is channel c's side of the exchange: blocks are taken in
// block order, block b from the ring of its worker under the routing in
// effect for b (exchange.ringFor). At a routing that changes the channel
// count the channel makes the Reconfig marker itself, before the
// routing's first block, as it makes End after the last block. Only the
// channel's goroutine calls pop; Cancel and Len are safe from anywhere.
type blockInput struct {
	x   *exchange
	cur *ring.SPSC[*core.Batch] // block b's ring, nil until resolved
	// ri reads cur and, with adaptive batching, the slot of what cur's
	// worker gathers for the channel, splitting gathered batches back
	// (batching.go); one per ring (ris), kept across blocks: a batch
	// taken from the slot may belong to the worker's next block, and is
	// returned when the channel reads that ring again.
	ri     *ringInput
	ris    map[*ring.SPSC[*core.Batch]]*ringInput
	blocks int
	b      int // the block being read
	// wm is the watermark generator (watermark.go) over the blocks in
	// block order: its points are the candidates, each block closed at
	// its block-end marker. blockMax is block b's largest event time so
	// far (its last candidate): at a barrier inside b, wm.prevMax and
	// blockMax together are the generator's state.
	wm       wmGen
	blockMax int64
	ended    bool
	channel  int
	ctx      context.Context
	// starved, when debloating is on, is x.starved[channel]: the time the
	// channel waited for input, on now's clock; nil otherwise.
	starved *atomic.Int64
	now     func() int64
}

func newBlockInput(x *exchange, channel, b int, bound, startWM int64, ctx context.Context) *blockInput {
	in := &blockInput{x: x, channel: channel, b: b, blocks: x.blocks(), wm: newWMGen(bound, startWM, x.src), blockMax: core.NoTime, ctx: ctx,
		ris: map[*ring.SPSC[*core.Batch]]*ringInput{}}
	if x.now != nil {
		in.starved, in.now = &x.starved[channel], x.now
	}
	return in
}

// popCur pops the block's ring; a pop that waits adds its wait to
// starved (debloating's sign that the channel keeps up with its workers).
func (in *blockInput) popCur(sc *stageCPU) (*core.Batch, error) {
	if bt, ok := in.ri.tryPop(); ok {
		return bt, nil
	}
	if in.starved == nil {
		return in.ri.wait(sc)
	}
	t0 := in.now()
	bt, err := in.ri.wait(sc)
	in.starved.Add(in.now() - t0)
	return bt, err
}

func (in *blockInput) pop(sc *stageCPU) (*core.Batch, error) {
	for {
		if in.b == in.blocks {
			if in.ended {
				return nil, ring.ErrClosed
			}
			if m, err := in.x.endBarrier(in); m != nil || err != nil {
				return m, err
			}
			in.ended = true
			end := core.NewMarker(core.End)
			end.MarkSeq, end.Stamp = uint64(in.blocks)<<blockSeqBits, time.Now().UnixNano()
			return end, nil
		}
		if in.cur == nil {
			t0 := sc.waitBegin()
			var w0 int64
			if in.starved != nil {
				w0 = in.now()
			}
			rg, cfg, err := in.x.ringFor(in.ctx, in.b, in.channel)
			sc.waited(t0)
			if in.starved != nil {
				in.starved.Add(in.now() - w0)
			}
			if err != nil {
				return nil, err
			}
			in.cur = rg
			if rg != nil {
				in.ri = in.ris[rg]
				if in.ri == nil {
					in.ri = &ringInput{rg: rg, held: cfg.heldFor(in.b, in.channel)}
					in.ris[rg] = in.ri
				}
			}
			if rc := cfg.change; cfg.block == in.b && rc != nil && in.channel < rc.from {
				// The change's marker: after every record of the blocks
				// before, before any of this one.
				if in.channel == 0 {
					if in.wm.times != nil {
						rc.maxTimes = in.wm.times.clone()
					}
					rc.publishWatermark(in.wm.prevMax, in.wm.last)
				}
				m := core.NewMarker(core.Reconfig)
				m.MarkSeq, m.Control, m.Stamp = rc.seq, rc, time.Now().UnixNano()
				return m, nil
			}
			if rg == nil {
				return nil, fmt.Errorf("channel %d: no ring for block %d", in.channel, in.b)
			}
		}
		bt, err := in.popCur(sc)
		if err != nil {
			return nil, err
		}
		switch bt.Kind {
		case core.Pulse:
			if bt.Control == blockEnd {
				in.wm.endBlock(in.b, bt.Watermark)
				in.blockMax = core.NoTime
				in.b++
				in.cur = nil
				bt.Release()
				continue
			}
		case core.Barrier:
			// Every channel is at the same point (all blocks before the
			// barrier's done, and its block up to it): channel 0 records
			// the watermark state. The largest event time is over both,
			// as the single source stage's: a restore inside the block
			// takes it as the blocks' before, and the block's candidates
			// after the position raise it no further than the
			// uninterrupted run's did.
			if bi := barrierOf(bt); bi != nil && in.channel == 0 {
				bi.maxTime, bi.wm = max(in.wm.prevMax, in.blockMax), in.wm.last
				if bi.inPiece {
					// Between two pieces of a batch (cut.go): the batch's
					// largest event time, whose candidate comes after its
					// last piece.
					bi.maxTime = max(bi.maxTime, bi.pieceMax)
					if in.wm.times != nil {
						in.wm.times.at(in.b)
						in.wm.times.see(bi.pieceMax)
					}
				}
				if in.wm.times != nil {
					bi.maxTimes = in.wm.times.String()
				}
			}
		case core.Watermark:
			in.blockMax = max(in.blockMax, bt.Watermark)
			if wm, ok := in.wm.at(in.b, bt.Watermark); ok {
				bt.Watermark = wm
			} else {
				// No new watermark here: the point still tells the merger
				// how far this channel is.
				bt.Kind, bt.Watermark = core.Pulse, 0
			}
		}
		return bt, nil
	}
}

// tailRoom is how many barriers may follow the last block: barrier i
// there has sequence number blocks<<blockSeqBits − tailRoom + i, after
// every record and marker of the last block and before End.
const tailRoom = 1 << 16

// endBarrier is what channel in.channel does once it has read every block,
// before it makes End, when the job checkpoints: it returns the next
// barrier placed after the end of the input that it has not delivered
// yet, or nil once none will be placed. It drives the protocol
// (endinput.Tail, x.tail, at most tailRoom − 1 barriers): each step,
// under mu, gives it the newest routing's channel count, whether the
// rings to the merger hold batches and whether a checkpoint is due
// (checkpointer.dueByClock); a barrier it places goes at block blocks —
// the position after every record; a restore from it reads nothing. While
// the protocol says wait, it polls, up to 5 ms apart. It returns ctx's
// error when the run stops.
func (x *exchange) endBarrier(in *blockInput) (*core.Batch, error) {
	r := x.r
	if r == nil || r.ck == nil {
		return nil, nil
	}
	for p := newPoll(); ; p.wait() {
		x.mu.Lock()
		last := x.configs[len(x.configs)-1]
		d := x.tail.Step(in.channel, endinput.Facts{Channels: last.channels(), RingsHold: ringsHold(r.mergerOuts), Due: r.ck.dueByClock()})
		var bi *barrierInfo
		switch d.Action {
		case endinput.Deliver:
			bi = x.tailInfo[d.Barrier]
		case endinput.Place:
			bi = r.startCheckpoint()
			bi.position, bi.block = x.recordsBefore(in.blocks), int64(in.blocks)
			bi.table, bi.channels, bi.tail = last.table, last.channels(), d.Barrier
			x.tailInfo = append(x.tailInfo, bi)
		}
		x.mu.Unlock()
		if bi != nil {
			if in.channel == 0 {
				bi.maxTime, bi.wm = in.wm.prevMax, in.wm.last
			}
			m := barrierMarker(bi, time.Now().UnixNano())
			m.MarkSeq = uint64(in.blocks)<<blockSeqBits - tailRoom + uint64(bi.tail)
			return m, nil
		}
		if d.Action == endinput.Close {
			return nil, nil
		}
		if err := in.ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// poll is a driver's wait between two steps of a protocol that polls:
// 50 µs, doubling up to 5 ms.
type poll struct{ d time.Duration }

func newPoll() poll { return poll{50 * time.Microsecond} }

func (p *poll) wait() {
	time.Sleep(p.d)
	p.d = min(2*p.d, 5*time.Millisecond)
}

// ringsHold says whether one of rgs holds batches (false once one is
// cancelled: the run stops).
func ringsHold(outs []*ring.SPSC[*core.Batch]) bool {
	for _, rg := range outs {
		if rg.Canceled() {
			return false
		}
		if rg.Len() > 0 {
			return true
		}
	}
	return false
}

// Cancel cancels channel c's rings from every worker of the newest
// routing (the others are cancelled with the run's).
func (in *blockInput) Cancel() {
	for _, rg := range in.x.channelRings(in.channel) {
		rg.Cancel()
	}
}

func (in *blockInput) Len() int {
	n := 0
	for _, rg := range in.x.channelRings(in.channel) {
		n += rg.Len()
	}
	return n
}

// exchange is the parallel-source side of a run: source workers, each
// with its splitter and pre-region instances, and the routings that say
// which worker reads which block and over which rings.
type exchange struct {
	r   *run
	src core.Splittable
	// splitIn is the splitters' input schema (workers added later make
	// theirs with it); startBlock is the block the workers start at (a
	// restore's), startSkip the records of it a restore's worker drops
	// (the checkpoint was taken inside the block).
	splitIn    *core.Schema
	startBlock int
	startSkip  int64

	// Barriers (checkpoints) go inside a block (midBarrier): when a
	// checkpoint is due, the barrier is requested, under mu, in the
	// smallest block a worker is reading (reading, current) at or after
	// floor, and that block's worker sends it between two of its batches,
	// at the next one it reaches, or at the block's end (endBlock). mid is
	// that block (−1: none requested), midInfo its checkpoint, and midReq
	// mirrors mid for the one atomic load a worker pays per batch.
	//
	// A checkpoint the control plane asks for (control.go) goes inside
	// the smallest block being read too (placeCheckpoint); only when no
	// block at or after floor is being read is it placed at block
	// pending = 1 + the largest block any worker has started (current),
	// which no worker has started yet; the worker of that block sends it
	// when it gets there, before the block.
	//
	// Live changes of the channel count and of the number of workers are
	// placed the same way (one barrier or change pending at a time): a
	// change placed before block B makes a routing that every worker takes
	// up at its first block ≥ B, and that says which worker reads each
	// block from B on; channels find a block's ring through it, once the
	// block has been started (started), when no later routing can still
	// cover it (rescale.go; docs/ARCHITECTURE.md, "Live channel changes").
	mu      sync.Mutex
	workers []*sourceWorker // by id; ids are never reused (worker.go)
	current []int           // by worker id: the block it reads (or read last)
	reading []bool          // by worker id: it is reading current (not at its end yet)
	retired []bool          // by worker id: it found no block left and stopped
	mid     int             // the block a requested barrier goes in; -1: none
	midInfo *barrierInfo
	midReq  atomic.Int64 // mid, read without mu
	// limits is the buffer-debloating limit last measured for each
	// channel's rings, by channel (debloater.seed); starved, by channel,
	// the time (ns on now's clock) each channel waited for input, which
	// the workers' debloat controllers read (a channel that waits keeps
	// up: no backpressure); now is nil when debloating is off.
	limits  []atomic.Int32
	starved []atomic.Int64
	// pieces is the piece last decided for each channel's rings, in
	// records (0: none), by channel: every worker cuts its batches by it
	// (cut.go).
	pieces []atomic.Int32
	now    func() int64
	// floor is the first block a barrier may go in: the block of the
	// newest change of logic (its JSON is in every later barrier's
	// updates, so no barrier may come before it).
	floor       int
	routed      []int // by worker id: the index in configs its splitter routes under
	pending     int   // the block the next barrier goes before; -1: none
	pendingInfo *barrierInfo
	// A change of logic placed at block pending takes the slot instead of
	// a barrier (control.go; r.logic.At says which): its block's worker
	// sends the Update marker.
	configs   []*routing // in block order; the first from the start block
	started   atomic.Int64
	routes    atomic.Pointer[[]*routing]  // configs, for the channels
	splitters atomic.Pointer[[]*splitter] // every worker's, for reports

	// Barriers after the end of the input (endBarrier), under mu: tail
	// the protocol's state (endinput.Tail), tailInfo the barriers it has
	// placed, by index, which every channel delivers before End.
	tail     *endinput.Tail
	tailInfo []*barrierInfo

	// Dead letters: each worker's pre-region operators and block reads
	// report bad records to its own deferred policy (sourceWorker.errs); its
	// splitter hands them to the merger's queue (letters.go) before it
	// pushes anything after them, tagged with the last sequence number
	// they can precede, and the merger writes all dead letters — the
	// workers' and the channels' — in input order.
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

// routing is how the workers route from a block on: which workers read
// which blocks (block b by ids[b mod len(ids)]), per worker position its
// rings to each channel, and the key-group table (nil for a stateless
// region). Immutable once placed.
type routing struct {
	block int
	ids   []int
	rings [][]*ring.SPSC[*core.Batch] // [position in ids][channel]
	// held is, beside each ring, the slot of what its worker gathers
	// (adaptive batching, batching.go); nil when batching is off.
	held  [][]*held
	table *kvstate.Table
	// change is the change of the channel count that starts here (nil
	// for none: the first routing, or a change of the workers only).
	change *reconf
}

// channels is the routing's channel count.
func (rt *routing) channels() int { return len(rt.rings[0]) }

// owner is the position in ids of the worker that reads block b.
func (rt *routing) owner(b int) int { return b % len(rt.ids) }

// heldFor is the gathering slot beside channel c's ring for block b (nil
// when batching is off).
func (rt *routing) heldFor(b, c int) *held {
	if rt.held == nil || c >= rt.channels() {
		return nil
	}
	return rt.held[rt.owner(b)][c]
}

// heldAt is the gathering slots of the worker at position p (nil when
// batching is off).
func (rt *routing) heldAt(p int) []*held {
	if rt.held == nil {
		return nil
	}
	return rt.held[p]
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
		// for the Go runtime and the OS (CorePlacer pins only then); a
		// region whose channel count changes trades cores with the
		// workers from there on (workersFor).
		m = cmp.Or(job.SourceCores, cores-2) - reg.Channels
	}
	return max(1, min(m, blocks))
}

// SourceWorkers is how many source workers Run will start for job on this
// machine (0: the single source stage), for placement.
func SourceWorkers(job *Job) int { return sourceWorkers(job, UsableCores()) }

// buildExchange makes the first routing (m workers, the region's
// channels), the workers' splitters and their pre-region instances; the
// workers start at block startBlock, dropping its first startSkip records
// (a restore's position, restoredBlock).
func (r *run) buildExchange(m int, splitIn *core.Schema, startBlock int, startSkip int64) error {
	reg := r.job.Region
	x := &exchange{src: r.job.Source.(core.Splittable), pending: -1, mid: -1, floor: startBlock, nextBlock: startBlock, done: map[int]bool{}, failBlock: -1}
	x.splitIn, x.startBlock, x.startSkip = splitIn, startBlock, startSkip
	x.midReq.Store(-1)
	x.turn = sync.NewCond(&x.lettersMu)
	x.limits, x.pieces = make([]atomic.Int32, r.maxChannels), make([]atomic.Int32, r.maxChannels)
	x.starved, x.now = make([]atomic.Int64, r.maxChannels), r.debloatClock()
	x.r, x.tail = r, endinput.New(tailRoom-1)
	x.started.Store(int64(startBlock) - 1)
	r.x = x
	first := &routing{block: startBlock}
	if len(reg.Key) > 0 {
		first.table = startTable(r.restore, true, reg.Groups, reg.Channels)
	}
	for range m {
		w, err := newSourceWorker(x, first.table, reg.Channels)
		if err != nil {
			return err
		}
		first.ids = append(first.ids, w.id)
		first.rings = append(first.rings, w.sp.rings)
		if w.sp.gather != nil {
			first.held = append(first.held, w.sp.gather)
		}
	}
	x.configs = []*routing{first}
	x.publish()
	r.initialTable = first.table
	return r.buildController()
}

// publish makes the routings and splitters visible to readers outside mu
// (x.mu held, or before the run starts).
func (x *exchange) publish() {
	routes := slices.Clone(x.configs)
	x.routes.Store(&routes)
	sps := make([]*splitter, len(x.workers))
	for i, w := range x.workers {
		sps[i] = w.sp
	}
	x.splitters.Store(&sps)
}

// configIndex is the index in configs of the routing in effect for block
// b (the last one starting at or before b).
func configIndex(configs []*routing, b int) int {
	k := len(configs) - 1
	for k > 0 && configs[k].block > b {
		k--
	}
	return k
}

// ringFor is channel c's ring for block b, and the routing in effect for
// b (no ring when that routing has no channel c). It waits until some worker has started b: from then on no routing can
// still be placed at or before b (they go after every started block), so
// the answer is final.
func (x *exchange) ringFor(ctx context.Context, b, c int) (*ring.SPSC[*core.Batch], *routing, error) {
	for spins := 0; x.started.Load() < int64(b); spins++ {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		if spins < 64 {
			goruntime.Gosched()
		} else {
			time.Sleep(20 * time.Microsecond)
		}
	}
	routes := *x.routes.Load()
	cfg := routes[configIndex(routes, b)]
	if c >= cfg.channels() {
		return nil, cfg, nil // the routing removes channel c: it retires at the change
	}
	return cfg.rings[cfg.owner(b)][c], cfg, nil
}

// channelRings is channel c's rings from every worker of the newest
// routing that has channel c.
func (x *exchange) channelRings(c int) []*ring.SPSC[*core.Batch] {
	routes := *x.routes.Load()
	for k := len(routes) - 1; k >= 0; k-- {
		if cfg := routes[k]; c < cfg.channels() {
			out := make([]*ring.SPSC[*core.Batch], len(cfg.rings))
			for p := range cfg.rings {
				out[p] = cfg.rings[p][c]
			}
			return out
		}
	}
	return nil
}

// nextFor is worker id's next block after block after (x.mu held), or −1
// when it has none left: it is in no routing from there on, or the input
// ends.
func (x *exchange) nextFor(id, after, start int) int {
	b := max(after+1, start)
	for k := configIndex(x.configs, b); k < len(x.configs) && b < x.blocks(); k++ {
		cfg := x.configs[k]
		b = max(b, cfg.block)
		end := x.blocks()
		if k+1 < len(x.configs) {
			end = x.configs[k+1].block
		}
		if p := slices.Index(cfg.ids, id); p >= 0 {
			m := len(cfg.ids)
			if c := b + ((p-b)%m+m)%m; c < end {
				return c
			}
		}
		b = end
	}
	return -1
}

// blockRecords is the checkpoint metadata's source key for the records
// of block "block" before the barrier (Metadata.Sources); absent when the
// barrier is at the block's start.
const blockRecords = "block_records"

// batchRecords is the checkpoint metadata's source key for the records
// of the source batch before a barrier between two of its pieces
// (cut.go); absent when the barrier is at a batch's end.
const batchRecords = "batch_records"

// restoredBlock is the position a checkpoint's workers resume at: block b,
// and the records of b before it, which b's worker drops. A checkpoint of
// the single source stage (a position in records, no block) fits a source
// that knows where its blocks start (core.BlockStarts): the first block
// starting at the position, or else the last one starting before it.
func restoredBlock(meta *snapshot.Metadata, src core.Splittable) (b int, skip int64, err error) {
	if b, ok := meta.Sources["block"]; ok {
		if skip = meta.Sources[blockRecords]; skip < 0 {
			return 0, 0, fmt.Errorf("%w: it records %d records of block %d before its position", ErrCheckpointMismatch, skip, b)
		}
		return int(b), skip, nil
	}
	pos := meta.Sources["source"]
	if pos == 0 {
		return 0, 0, nil
	}
	if bs, ok := src.(core.BlockStarts); ok && src.Blocks() != 0 {
		n := src.Blocks()
		if n < 0 { // unbounded: every block holds a record at least
			n = int(min(pos, math.MaxInt-1)) + 1
		}
		// The first block starting at or after pos.
		b := sort.Search(n, func(b int) bool { return bs.BlockStart(b) >= pos })
		if b < n && bs.BlockStart(b) == pos {
			return b, 0, nil
		}
		// Inside block b-1 (block 0 starts at 0 < pos); past the input's
		// end, b-1's worker finds the block too short and fails.
		return b - 1, pos - bs.BlockStart(b-1), nil
	}
	return 0, 0, fmt.Errorf("%w: it was taken with one source stage (a rate-limited generator, or a streamd from before 2026-12-01) at record %d, and this job reads by blocks a source that cannot say where they start: resume it with the settings it was taken with", ErrCheckpointMismatch, pos)
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
	return fmt.Errorf("%w: it was taken by source workers before block %d of a source that does not count the records before a block (CSV, JSON lines), and this job reads its source with one source stage (no region): resume it with the settings it was taken with", ErrCheckpointMismatch, b)
}

// input is channel c's side of the exchange; the restore's watermark
// state when r resumes from a checkpoint.
func (r *run) input(c int, bound int64) (*blockInput, error) {
	in := newBlockInput(r.x, c, r.x.startBlock, bound, r.startWM, r.ctx)
	if r.restore != nil {
		fmt.Sscan(r.restore.Meta.Extra["max_event_time"], &in.wm.prevMax)
		if in.wm.times != nil {
			if err := in.wm.times.restore(&r.restore.Meta); err != nil {
				return nil, err
			}
		}
	}
	return in, nil
}

// barrierBlock is the block a checkpoint due now puts its barrier in
// (x.mu held): the smallest block a worker is reading, at or after floor;
// −1 when there is none. Any block being read would do (see midBarrier);
// the smallest is the one the channels reach first.
func (x *exchange) barrierBlock() int {
	t := -1
	for id, on := range x.reading {
		if b := x.current[id]; on && b >= x.floor && (t < 0 || b < t) {
			t = b
		}
	}
	return t
}

// requestBarrier starts the next checkpoint and requests its barrier in
// block t, which a worker is reading (x.mu held). A request not yet sent
// is replaced: its checkpoint has timed out (a new one is due only when
// none is in flight).
func (x *exchange) requestBarrier(t int) {
	r := x.r
	if old := x.midInfo; old != nil && old.req != nil {
		// Never sent: its waiter hears of the timeout from the coordinator.
		r.answer(old.req, Outcome{Epoch: old.epoch, Position: -1}, old.wait, nil)
	}
	x.mid, x.midInfo = t, r.startCheckpoint()
	x.midReq.Store(int64(t))
}

// takeBarrier returns the barrier requested in block b and forgets the
// request; nil if none is (x.mu held).
func (x *exchange) takeBarrier(b int) *barrierInfo {
	if x.mid != b {
		return nil
	}
	info := x.midInfo
	x.mid, x.midInfo = -1, nil
	x.midReq.Store(-1)
	return info
}

// workersFor is how many source workers a routing with n channels gets:
// with Job.SourceParallelism set, the workers still reading (now: no new
// ones, as near the end of the input some have no block left), else the
// source cores less the channels (trading cores between source workers
// and channels), at least 1, at most one per block.
func (x *exchange) workersFor(n, now int) int {
	r := x.r
	if r.job.SourceParallelism > 0 {
		return now
	}
	return max(1, min(r.sourceCores()-n, x.blocks()))
}

// sourceCores is how many cores source workers and channels share when
// both are automatic: Job.SourceCores, or the cores less the merger and
// one spare.
func (r *run) sourceCores() int {
	if c := r.job.SourceCores; c > 0 {
		return c
	}
	return UsableCores() - 2
}

// placeChange places a change to n channels before block b, which no
// worker has started (x.mu held), or, with table set, a rebalance step to
// table at the same channel count and the same workers: prepare
// (rescale.go) — the new routing
// (the workers it keeps and adds, the key groups that move, the rings),
// the channels and workers it adds, started at once: new channels wait
// for their key groups and for the watermark state at b (channel 0
// publishes it when it reaches the change), new workers for their blocks.
func (x *exchange) placeChange(n, b int, table *kvstate.Table) error {
	r := x.r
	if n < 1 || n > r.maxChannels {
		return fmt.Errorf("rescale to %d channels: allowed 1..%d", n, r.maxChannels)
	}
	last := x.configs[len(x.configs)-1]
	from := last.channels()
	alive := 0
	for _, id := range last.ids {
		if !x.retired[id] {
			alive++
		}
	}
	m := x.workersFor(n, max(1, alive))
	if table != nil {
		m = max(1, alive)
	}
	rc := newReconf(uint64(b)<<blockSeqBits, from, n, m+1, table != nil)
	rc.watermark = make(chan struct{})
	next := &routing{block: b, change: rc}
	switch {
	case table != nil:
		next.table = table
		rc.moves(last.table, next.table)
	case last.table != nil:
		next.table = last.table.Resize(n)
		rc.moves(last.table, next.table)
	}
	// Workers kept (those of the routing before that have not stopped:
	// one whose blocks there all lie before b may have), with their rings
	// to the channels kept and new rings to the channels added.
	for p := range len(last.ids) {
		if len(next.ids) == m || x.retired[last.ids[p]] {
			continue
		}
		rings := slices.Clone(last.rings[p][:min(from, n)])
		var slots []*held
		if last.held != nil {
			slots = slices.Clone(last.held[p][:min(from, n)])
		}
		for range max(0, n-from) {
			rg, err := r.newRing()
			if err != nil {
				return err
			}
			rings = append(rings, rg)
			if last.held != nil {
				slots = append(slots, new(held))
			}
		}
		next.ids, next.rings = append(next.ids, last.ids[p]), append(next.rings, rings)
		if slots != nil {
			next.held = append(next.held, slots)
		}
	}
	var added []*sourceWorker
	for len(next.ids) < m {
		w, err := newSourceWorker(x, next.table, n)
		if err != nil {
			return err
		}
		added = append(added, w)
		next.ids, next.rings = append(next.ids, w.id), append(next.rings, w.sp.rings)
		if w.sp.gather != nil {
			next.held = append(next.held, w.sp.gather)
		}
	}
	err := r.addChannels(rc, core.NoTime, func(c int) (input, error) {
		return newBlockInput(x, c, b, r.job.EventTime.MaxOutOfOrder, core.NoTime, r.ctx), nil
	})
	if err != nil {
		return err
	}
	x.configs = append(x.configs, next)
	for _, w := range added {
		x.routed[w.id] = len(x.configs) - 1
		x.current[w.id] = b - 1
	}
	x.publish()
	r.mergerOuts = rc.outs
	if table == nil {
		r.changed(n)
	}
	for _, w := range added {
		w.start()
	}
	return nil
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
