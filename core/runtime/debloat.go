package runtime

import (
	"sync/atomic"
	"time"

	"streamd/core"
	"streamd/internal/debloat"
	"streamd/ring"
)

// Buffer debloating (docs/ARCHITECTURE.md, "Checkpoints under
// backpressure"). A checkpoint barrier travels in-band, behind every batch
// queued before it (the FIFO rule the reconfiguration markers and the
// merger's alignment rely on), so under backpressure it waits for the
// rings between the source and the sink to drain: with 64-batch rings and
// a slow operator, that is seconds per ring. Instead of letting barriers
// overtake data (unaligned checkpoints), streamd bounds the data in
// flight by time: each producer gives its ring an effective capacity
// (ring.SPSC.SetLimit) that its consumer drains in about the buffer
// target, measured by a debloat.Controller.
//
// The controller is fed only on a producer's slow path (a push that found
// its ring at the limit), with the clock read twice around the wait: with
// no backpressure a push costs exactly what it did. Rings covered: every
// ring on a barrier's path — the splitter's rings to the channels (the
// single source stage's and every source worker's M×N rings: each of
// channel c's M rings drains only while c reads that worker's block, so
// its limit is its share of c's throughput, and together they hold about
// the target), each channel's ring to the merger, and, with output
// workers, the merger's rings to them and theirs to the writer.
//
// Slow start: a ring starts at its floor (newRing: debloatMin; the rings
// around the output workers: debloatItemMin), before anything is
// measured, so that the data in flight never exceeds the target at the
// start of a run either; its producer's controller doubles it per window
// in which it was rarely blocked, or in which its consumer waited for
// input (a source worker's ring whose channel reads another worker's
// block: exchange.starved), to the ring's size within a few windows when
// there is no backpressure.

// debloatMin is the smallest effective capacity, in batches: room for a
// data batch and the markers that follow it (watermark, pulse), so that a
// debloated ring never serialises the two stages batch by batch.
const debloatMin = 4

// debloatItemMin is the floor of the rings around the output workers (the
// merger's ring to each worker, each worker's ring to the writer). They
// carry items, a data batch or a barrier each, and no watermark or pulse:
// one slot already lets both stages work at once (the producer makes its
// next item while the consumer takes this one). And the K rings of a
// layer drain in turn, so at the floor a layer holds K times it in front
// of a barrier: at debloatMin, with 2 workers and a slow sink, 16 items
// on the output side alone, which put the barrier more than twice the
// interval behind (TestOutputCheckpointsUnderBackpressure).
const debloatItemMin = 1

// maxBufferTarget caps the chosen buffer target (Flink's default).
const maxBufferTarget = time.Second

// bufferTarget is the buffer target job asks for: its BufferTarget, or,
// when 0, a quarter of the checkpoint interval up to maxBufferTarget when
// it checkpoints on an interval; 0 means off. A quarter: a barrier
// crosses two debloated rings in series (splitter → channel → merger),
// four with output workers (→ worker → writer), so it waits about half an
// interval (one, with workers) behind the data, and a checkpoint due at t
// completes by then + the operators' time on the last batches: within
// twice the interval, as long as the rings' floors (debloatMin,
// debloatItemMin) hold less than the target at the consumer's rate.
func bufferTarget(job *Job) time.Duration {
	switch t := job.BufferTarget; {
	case t < 0:
		return 0
	case t > 0:
		return t
	}
	if cp := job.Checkpoint; cp != nil && cp.Interval > 0 && cp.EveryBatches == 0 {
		return min(cp.Interval/4, maxBufferTarget)
	}
	return 0
}

// debloater is one producer's debloat controllers, one per ring it pushes
// to (by index). Only the producer's goroutine uses it.
type debloater struct {
	now    func() int64 // ns; the checkpoint clock when scripted
	target time.Duration
	floor  int // the smallest limit, slots: debloatMin or debloatItemMin
	ctl    []debloat.Controller
	// shared, for a source worker, is the run's last limit by channel
	// (0: none yet), which every worker publishes and seeds its rings
	// with at a block's start (seed); nil for other producers.
	shared []atomic.Int32
	// starved, for a source worker, is each channel's running total of
	// the time it waited for input (ns on now's clock: exchange.starved),
	// by channel; nil for other producers.
	starved []atomic.Int64
	// tallies, for a splitter's debloater (countPieces), are the records
	// and data slots pushed to each ring, by ring, so that its
	// controllers measure the channels' throughput in records and decide
	// pieces (debloat.Controller.Piece); nil for other producers.
	tallies []tally
	// pieces, with tallies, is each channel's piece decided last, in
	// records (0: none), by ring index: the source workers' exchange.pieces,
	// shared by every worker, or the single source stage's own.
	pieces []atomic.Int32
}

// pieceLeast is the smallest piece a splitter cuts (records): below it a
// slot's fixed costs (a ring slot, the channel's loop, the operators'
// per-batch work) would dominate whatever the consumer's cost model says.
const pieceLeast = 16

// tallySpare is how many entries a tally has beyond its ring's capacity.
const tallySpare = 3

// tally is the records and data slots pushed to one ring, by push:
// entry k % len is the running totals after push k. A ring holds at
// most its capacity, so with capacity + tallySpare entries the entry of
// the push before the last one the consumer took (Popped − 2, done) is
// never overwritten before it is read, the push being counted included.
// Two stores per push; read on the slow path only.
type tally struct {
	recs, data   []uint64
	nrecs, ndata uint64
}

// newDebloater returns a debloater for rings of the run's size, or nil
// when debloating is off.
func (r *run) newDebloater() *debloater {
	t := bufferTarget(r.job)
	if t <= 0 {
		return nil
	}
	return &debloater{now: r.debloatClock(), target: t, floor: debloatMin}
}

// newItemDebloater is newDebloater for rings that carry items only (the
// rings around the output workers): floor debloatItemMin.
func (r *run) newItemDebloater() *debloater {
	d := r.newDebloater()
	if d != nil {
		d.floor = debloatItemMin
	}
	return d
}

// clock is the clock (ns) of the runtime's time-driven controls
// (debloating, the splitter's batch linger): the checkpoint clock when
// scripted, so that tests drive them without timing, else the wall clock.
func (r *run) clock() func() int64 {
	if cp := r.job.Checkpoint; cp != nil && cp.Now != nil {
		now := cp.Now
		return func() int64 { return now().UnixNano() }
	}
	return func() int64 { return time.Now().UnixNano() }
}

// debloatClock is the clock the debloaters read (ns): r.clock; nil when
// debloating is off.
func (r *run) debloatClock() func() int64 {
	if bufferTarget(r.job) <= 0 {
		return nil
	}
	return r.clock()
}

// slowStart gives a ring on a barrier's path its starting effective
// capacity when debloating is on (floor, the floor of its producer's
// debloater: slow start), before its producer has it.
func slowStart[T any](job *Job, rg *ring.SPSC[T], floor int) {
	if bufferTarget(job) > 0 {
		rg.SetLimit(floor)
	}
}

// reset forgets what was measured: the producer pushes to other rings
// from now on (a live change). Rings it keeps keep their limit until the
// next decision.
func (d *debloater) reset() {
	clear(d.ctl)
	for i := range d.tallies {
		d.tallies[i] = tally{}
	}
}

// countPieces makes d, a splitter's debloater, count what it pushes to
// each ring and decide pieces (cut.go) into pieces, by ring index.
func (d *debloater) countPieces(pieces []atomic.Int32) {
	d.tallies, d.pieces = []tally{}, pieces
}

// count adds b, about to be pushed to rg (ring i), to the ring's tally.
func (d *debloater) count(i int, rg *ring.SPSC[*core.Batch], b *core.Batch) {
	if i >= len(d.tallies) {
		d.tallies = append(d.tallies, make([]tally, i+1-len(d.tallies))...)
	}
	t := &d.tallies[i]
	if n := rg.Cap() + tallySpare; len(t.recs) != n {
		*t = tally{recs: make([]uint64, n), data: make([]uint64, n)}
	}
	if b.Kind == core.Data && b.Len > 0 {
		t.nrecs += uint64(b.Len)
		t.ndata++
	}
	k := rg.Pushed() % uint64(len(t.recs))
	t.recs[k], t.data[k] = t.nrecs, t.ndata
}

// done is the data slots and records the consumer of ring i has
// finished, popped being its count of slots taken: those of the first
// popped − 1 pushes (it works on the last one it took; the time between
// two of its pops is the time of the first one's slot) — 0, 0 without a
// tally.
func (d *debloater) done(i int, popped uint64) (data, recs uint64) {
	if i >= len(d.tallies) || popped < 2 || len(d.tallies[i].recs) == 0 {
		return 0, 0
	}
	t := &d.tallies[i]
	k := (popped - 2) % uint64(len(t.recs))
	return t.data[k], t.recs[k]
}

// push is sc.push(rg, b), rg being the producer's ring i, with rg's
// effective capacity updated after a push that waited.
func (d *debloater) push(sc *stageCPU, i int, rg *ring.SPSC[*core.Batch], b *core.Batch) (blockedNs int64, err error) {
	if d.tallies != nil {
		d.count(i, rg, b)
	}
	if rg.TryPush(b) {
		return 0, nil
	}
	t0 := d.now()
	blockedNs, err = sc.push(rg, b)
	if err != nil {
		return blockedNs, err
	}
	observe(d, i, rg, t0)
	return blockedNs, nil
}

// pushEncoded is push for an output worker's ring to the writer.
func (d *debloater) pushEncoded(sc *stageCPU, i int, rg *ring.SPSC[*encoded], it *encoded) (blockedNs int64, err error) {
	if rg.TryPush(it) {
		return 0, nil
	}
	t0 := d.now()
	blockedNs, err = sc.pushEncoded(rg, it)
	if err != nil {
		return blockedNs, err
	}
	observe(d, i, rg, t0)
	return blockedNs, nil
}

// observe feeds ring i's controller after a push to rg that waited from
// t0 (d.now's clock) until now, and sets rg's effective capacity to its
// answer (and publishes it, for a source worker).
func observe[T any](d *debloater, i int, rg *ring.SPSC[T], t0 int64) {
	c := d.controller(i, rg.Cap(), rg.Limit())
	t1 := d.now()
	var starved int64
	if i < len(d.starved) {
		starved = d.starved[i].Load()
	}
	popped := rg.Popped()
	data, recs := d.done(i, popped)
	limit := c.ObserveRecords(t1, popped, data, recs, t1-t0, starved)
	rg.SetLimit(limit)
	if i < len(d.pieces) && d.tallies != nil {
		d.pieces[i].Store(int32(c.Piece()))
	}
	if i < len(d.shared) {
		d.shared[i].Store(int32(limit))
	}
}

// controller is ring i's controller, made on first use for a ring of
// capacity size whose effective capacity is now limit (its slow start, or
// what it kept across reset): that limit holds until the first decision.
func (d *debloater) controller(i, size, limit int) *debloat.Controller {
	for len(d.ctl) <= i {
		d.ctl = append(d.ctl, debloat.Controller{})
	}
	c := &d.ctl[i]
	if c.Target == 0 {
		*c = debloat.Controller{Target: int64(d.target), Min: min(d.floor, size), Max: size}
		if d.tallies != nil {
			c.Slot, c.Least = core.BatchSize, pieceLeast
		}
		if limit < size {
			c.Seed(limit)
		}
	}
	return c
}

// seed is what a source worker does at the start of a block: each of its
// rings takes the limit last measured for its channel by any worker.
// Channel c drains the M rings to it one block at a time, so a ring whose
// block c does not read yet gives its producer no measure (its push just
// waits), and would fill to its capacity, all of it in front of a barrier
// later placed in that block (worker.go, midBarrier); the limit of the
// ring c reads now is the right one for every ring to c. Costs a few
// atomic loads per block.
func (d *debloater) seed(rings []*ring.SPSC[*core.Batch]) {
	for i, rg := range rings {
		if i >= len(d.shared) {
			return
		}
		if l := int(d.shared[i].Load()); l > 0 {
			rg.SetLimit(d.controller(i, rg.Cap(), rg.Limit()).Seed(l))
		}
	}
}
