package runtime

import (
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
// no backpressure a push costs exactly what it did. Rings covered: the
// splitter's rings to the channels (the single source stage's and every
// source worker's M×N rings: each of channel c's M rings drains only
// while c reads that worker's block, so its limit is its share of c's
// throughput, and together they hold about the target) and each
// channel's ring to the merger. The merger's rings to output workers
// keep their full size.

// debloatMin is the smallest effective capacity, in batches: room for a
// data batch and the markers that follow it (watermark, pulse), so that a
// debloated ring never serialises the two stages batch by batch.
const debloatMin = 4

// maxBufferTarget caps the chosen buffer target (Flink's default).
const maxBufferTarget = time.Second

// bufferTarget is the buffer target job asks for: its BufferTarget, or,
// when 0, a quarter of the checkpoint interval up to maxBufferTarget when
// it checkpoints on an interval; 0 means off. A quarter: a barrier
// crosses at most two debloated rings in series (splitter → channel →
// merger), so it waits about half an interval behind the data, and a
// checkpoint due at t completes by t + interval/2 + the operators' time on
// the last batches: within twice the interval.
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
	ctl    []debloat.Controller
}

// newDebloater returns a debloater for rings of the run's size, or nil
// when debloating is off.
func (r *run) newDebloater() *debloater {
	t := bufferTarget(r.job)
	if t <= 0 {
		return nil
	}
	return &debloater{now: r.clock(), target: t}
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

// reset forgets what was measured: the producer pushes to other rings
// from now on (a live change). Rings it keeps keep their limit until the
// next decision.
func (d *debloater) reset() { clear(d.ctl) }

// push is sc.push(rg, b), rg being the producer's ring i, with rg's
// effective capacity updated after a push that waited.
func (d *debloater) push(sc *stageCPU, i int, rg *ring.SPSC[*core.Batch], b *core.Batch) (blockedNs int64, err error) {
	if rg.TryPush(b) {
		return 0, nil
	}
	t0 := d.now()
	blockedNs, err = sc.push(rg, b)
	if err != nil {
		return blockedNs, err
	}
	for len(d.ctl) <= i {
		d.ctl = append(d.ctl, debloat.Controller{})
	}
	c := &d.ctl[i]
	if c.Target == 0 {
		*c = debloat.Controller{Target: int64(d.target), Min: min(debloatMin, rg.Cap()), Max: rg.Cap()}
	}
	t1 := d.now()
	rg.SetLimit(c.Observe(t1, rg.Popped(), t1-t0))
	return blockedNs, nil
}
