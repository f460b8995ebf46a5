package runtime

import (
	"sync/atomic"
	"time"
)

// doorbell wakes a consumer that polls several rings (the merger) when it
// has parked. Producers ring it after each push; it costs one atomic load
// unless the consumer is parked, so the steady state makes no syscall and no
// Go channel operation.
//
// Lost-wakeup argument: the consumer stores parked=1, then re-checks every
// ring; a producer publishes its push, then loads parked. Go's atomics are
// sequentially consistent, so either the consumer's re-check sees the push or
// the producer sees parked=1 and sends the wake-up.
type doorbell struct {
	parked atomic.Int32
	wake   chan struct{}
}

func newDoorbell() *doorbell { return &doorbell{wake: make(chan struct{}, 1)} }

// ring wakes the consumer if it is parked.
func (d *doorbell) ring() {
	if d.parked.Load() != 0 {
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
}

// wait parks until rung, unless ready (called after parked is set) finds work.
func (d *doorbell) wait(ready func() bool) {
	d.parked.Store(1)
	if !ready() {
		<-d.wake
	}
	d.parked.Store(0)
	select { // drop a wake-up that raced with ready() returning true
	case <-d.wake:
	default:
	}
}

// waitFor is wait that also returns after t without a ring (a consumer
// that decides something on a clock while nothing comes: an idle input).
func (d *doorbell) waitFor(ready func() bool, t time.Duration) {
	d.parked.Store(1)
	if !ready() {
		tm := time.NewTimer(t)
		select {
		case <-d.wake:
		case <-tm.C:
		}
		tm.Stop()
	}
	d.parked.Store(0)
	select {
	case <-d.wake:
	default:
	}
}
