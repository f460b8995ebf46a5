package runtime

import (
	"fmt"
	"time"

	"streamd/core"
	"streamd/core/runtime/align"
	"streamd/ring"
)

// Several input edges (docs/ARCHITECTURE.md, "Determinism", several
// inputs): edges is the input of a channel stage that reads one SPSC ring
// per input edge, and the channel's loop runs on it unchanged (it is an
// input). What each edge delivers goes through align.Inputs, the state
// machine, which decides; edges drives it:
//
//   - Data from an edge that is not held goes to the channel as it is,
//     in the order align.Inputs.Next gives (round robin over the edges
//     that are readable, each read until it has nothing: the weak
//     promise; a merge in an order fixed by the inputs needs each
//     barrier at one point of that order, which the union's interleave
//     gives, and is not this type's).
//   - An edge's Watermark marker sets its watermark; the stage's (the
//     minimum over the edges that count) goes to the channel as one
//     Watermark marker whenever it rises.
//   - An edge's Barrier holds the edge: it is not read again until the
//     barrier arrived on every edge that has not ended. Nothing is
//     buffered meanwhile: what the held edge's producer pushes waits in
//     its ring, which fills and blocks the producer (backpressure), so
//     the memory a held edge takes is its ring's, never the stage's. The
//     barrier goes to the channel once, when complete (the first copy;
//     the others are released).
//   - An edge's End drops it from the minimum and counts as aligned (it
//     may complete a barrier). End goes to the channel once every edge
//     ended.
//   - An edge with nothing to read for idleAfter on the injected clock
//     is idle (align.Inputs.Idle): its watermark leaves the minimum until
//     it delivers again. Idleness does not excuse it from a barrier.
//   - Pulses are dropped (the channel sends its own); other markers
//     (Reconfig, Update) are not aligned across edges yet: an error.
//
// Only the channel's goroutine calls pop; Cancel and Len are safe from
// anywhere. The producers ring bell after each push.
type edges struct {
	rings []*ring.SPSC[*core.Batch]
	a     *align.Inputs
	bell  *doorbell
	// now is the injected clock (ns) idleness is decided on; idleAfter
	// the time without anything from an edge after which it is idle (0:
	// never). seen is by edge when it last gave something, idle whether it
	// was declared idle since.
	now       func() int64
	idleAfter int64
	seen      []int64
	idle      []bool
	// barrier is the first copy of the barrier aligning (nil: none);
	// lastWM the last watermark handed out; out the markers made and not
	// handed out yet (a barrier and a watermark at one step), in order.
	barrier *core.Batch
	lastWM  int64
	out     []*core.Batch
	ended   bool // End handed out
}

// newEdges makes the input of a stage reading rings, one per input edge
// (at least one), whose producers ring bell. now is its clock (ns) and
// idleAfter the time after which an edge with nothing to read is idle (0:
// never; then now may be nil).
func newEdges(rings []*ring.SPSC[*core.Batch], bell *doorbell, now func() int64, idleAfter time.Duration) *edges {
	e := &edges{rings: rings, a: align.New(len(rings)), bell: bell, now: now, idleAfter: int64(idleAfter),
		seen: make([]int64, len(rings)), idle: make([]bool, len(rings)), lastWM: align.NoTime}
	if e.idleAfter > 0 {
		t := now()
		for i := range e.seen {
			e.seen[i] = t
		}
	}
	return e
}

// pop is the channel's next batch (see edges): it parks on the doorbell
// while no edge it may read has anything. Errors: ring.ErrCanceled
// (Cancel), ring.ErrClosed (an edge closed without End, or a pop after
// End), an edge that broke the protocol (align's errors: a bug upstream).
// It takes no CPU account of waits (sc may be nil).
func (e *edges) pop(sc *stageCPU) (*core.Batch, error) {
	for {
		b, err := e.step()
		if b != nil || err != nil {
			return b, err
		}
		if e.idleAfter > 0 {
			// Wake in time to find an edge idle, on the clock's time.
			e.bell.waitFor(e.readable, time.Duration(e.idleAfter))
		} else {
			e.bell.wait(e.readable)
		}
	}
}

// step is pop without the wait: the next batch, or nil when no edge it
// may read has anything now.
func (e *edges) step() (*core.Batch, error) {
	if len(e.out) > 0 {
		b := e.out[0]
		e.out = e.out[1:]
		return b, nil
	}
	if e.ended {
		return nil, ring.ErrClosed
	}
	for range len(e.rings) {
		i, ok := e.a.Next()
		if !ok { // every edge ended
			e.ended = true
			return core.NewMarker(core.End), nil
		}
		rg := e.rings[i]
		b, ok := rg.TryPop()
		if !ok {
			if rg.Canceled() {
				return nil, ring.ErrCanceled
			}
			if rg.Closed() {
				if b, ok = rg.TryPop(); !ok { // pushed before Close
					return nil, fmt.Errorf("input edge %d: %w without End", i, ring.ErrClosed)
				}
			} else {
				e.checkIdle(i)
				if len(e.out) > 0 {
					return e.step()
				}
				continue
			}
		}
		if e.idleAfter > 0 {
			e.seen[i], e.idle[i] = e.now(), false
		}
		if err := e.take(i, b); err != nil {
			return nil, err
		}
		if len(e.out) > 0 {
			return e.step()
		}
	}
	return nil, nil
}

// take carries out what edge i delivered, b: data goes to out as it is,
// markers become what align decides.
func (e *edges) take(i int, b *core.Batch) error {
	switch b.Kind {
	case core.Data:
		if _, err := e.a.Data(i, align.NoTime); err != nil {
			b.Release()
			return err
		}
		e.out = append(e.out, b)
	case core.Watermark:
		err := e.a.Watermark(i, b.Watermark)
		b.Release()
		if err != nil {
			return err
		}
		e.watermark()
	case core.Barrier:
		complete, err := e.a.Barrier(i, int64(b.Epoch))
		if err != nil {
			b.Release()
			return err
		}
		if e.barrier == nil {
			e.barrier = b
		} else {
			b.Release()
		}
		if complete {
			e.out, e.barrier = append(e.out, e.barrier), nil
		}
	case core.End:
		b.Release()
		done, err := e.a.End(i)
		if err != nil {
			return err
		}
		if done != 0 {
			e.out, e.barrier = append(e.out, e.barrier), nil
		}
		e.watermark() // the edge left the minimum
	case core.Pulse:
		b.Release()
	default:
		k := b.Kind
		b.Release()
		return fmt.Errorf("input edge %d: a %s marker: several input edges align barriers only", i, k)
	}
	return nil
}

// watermark queues a Watermark marker when the stage's watermark rose.
func (e *edges) watermark() {
	if wm, ok := e.a.Output(); ok && wm > e.lastWM {
		e.lastWM = wm
		m := core.NewMarker(core.Watermark)
		m.Watermark = wm
		e.out = append(e.out, m)
	}
}

// checkIdle declares edge i idle when it has had nothing for idleAfter.
func (e *edges) checkIdle(i int) {
	if e.idleAfter <= 0 || e.idle[i] || e.now()-e.seen[i] < e.idleAfter {
		return
	}
	e.idle[i] = true
	e.a.Idle(i)
	e.watermark()
}

// readable is the doorbell's condition: an edge pop may read has
// something, or was closed or canceled.
func (e *edges) readable() bool {
	for i, rg := range e.rings {
		if e.a.Ended(i) || e.a.Held(i) {
			continue
		}
		if rg.Len() > 0 || rg.Closed() || rg.Canceled() {
			return true
		}
	}
	return false
}

// Cancel cancels every edge's ring: the producers stop.
func (e *edges) Cancel() {
	for _, rg := range e.rings {
		rg.Cancel()
	}
}

// Len is what the edges' rings hold.
func (e *edges) Len() int {
	n := 0
	for _, rg := range e.rings {
		n += rg.Len()
	}
	return n
}
