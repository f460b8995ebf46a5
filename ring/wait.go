package ring

import "time"

// The wait strategy of the blocking methods. Step i of a wait (i = 0, 1, …
// counts failed attempts since the wait started at start):
//
//   - i < spinSteps: re-try at once. The peer is most likely running on
//     another core and a core-to-core round trip costs 100–200 ns, so a few
//     hundred re-reads of a cached line (about 1 µs) cover a short wait.
//   - until yieldFor has passed since start: sched_yield(2) (osYield)
//     between tries, so that another thread on this core (the peer, when
//     threads outnumber cores) can run. Not runtime.Gosched: on a goroutine
//     locked to its thread, as pinned workers are, Gosched hands the
//     goroutine through the scheduler and back to its thread, two futex
//     sleeps and wakes (about 28 µs on the build VM).
//   - then: park on the side's 1-buffered wake channel. Waking a goroutine
//     that is locked to its thread costs a futex wake plus a scheduler
//     handoff, 30–60 µs on the build VM; if a side parked sooner than that,
//     its peer would often give up waiting too, and one descheduled thread
//     would set off a chain of parks (a ping-pong over two rings measured
//     10× slower with a 10 µs budget than with 100 µs). Hence a budget a
//     little above the wake cost: a side that parks has been idle for long
//     enough that the wake cost no longer matters.
//
// The yield step is for threads that have a core each, with one to spare
// for everything else (pinned stages): there a yield lets a runtime or OS
// thread run for a moment and the peer is most likely running elsewhere.
// Where more threads want to run than there are cores (stages that share
// cores, or a core left without a spare), it is wrong twice: the waiting
// goroutine keeps its P, and the thread gives its core only to one that is
// runnable right then, so a side can hold the core its peer needs, for the
// whole budget, over and over. The owner of the rings knows the cores and
// the stages and sets the budget per ring with SetYield: 0 then, so that a
// blocked side spins and parks (core/runtime: spareCore). The spin is kept:
// on two cores the peer may well run on the other one, and a spin that
// does not succeed costs about 1 µs before a park that costs tens.
const (
	spinSteps = 256
	yieldFor  = 100 * time.Microsecond
)

// Parking without lost wakeups.
//
// The consumer parks like this (the producer symmetrically, with "full"
// for "empty"):
//
//	C1  consumerParked.Store(1)
//	C2  if tail.Load() != head || state.Load() != 0 { undo; retry }
//	C3  <-cwake
//
// and every publish of the producer (and Close) is followed by a check:
//
//	P1  tail.Store(t+n)            (or state.Or(stateClosed))
//	P2  if consumerParked.Load() != 0 && consumerParked.Swap(0) != 0 { cwake <- (non-blocking) }
//
// Go's sync/atomic operations are sequentially consistent (Go memory model,
// "Atomic Values"): all of them appear in one total order that respects each
// goroutine's program order. This is Dekker's pattern: each side stores its
// own variable, then loads the other's. If C2 reads the old tail (it decides
// to sleep), then C2 precedes P1 in the total order, so C1 precedes P2 and
// P2 reads consumerParked == 1: the producer sends a token. If P2 reads 0,
// then P2 precedes C1, so P1 precedes C2 and the consumer sees the new tail
// and does not sleep. Either way no publish is missed.
//
// The wake channel has one buffer slot and sends never block, so a waker
// never waits for a sleeper. A token can arrive after the sleeper has
// already left through C2 (it undid its flag after the waker had swapped
// it); the next park then returns at once: a spurious wakeup, harmless
// because every park is inside a loop that re-tests the ring.
//
// On amd64 an atomic Store is an XCHG, a full barrier: that is the price of
// this ordering, paid once per publish (once per batch with TryPushN), and
// it is why the steady state needs neither a lock nor a channel operation.

// Push appends v, waiting while the ring is full, and returns the
// nanoseconds it spent waiting (0 when there was room at once; the
// splitter's congestion index sums these; Gedik et al., TPDS 2014).
// The total is also added to PushBlockedNs. It returns ErrClosed after
// Close and ErrCanceled after Cancel (v was then not pushed). On nil, v
// belongs to the consumer. Producer only.
func (r *SPSC[T]) Push(v T) (blockedNs int64, err error) {
	if r.TryPush(v) {
		return 0, nil
	}
	if err := r.producerErr(); err != nil {
		return 0, err
	}
	start := time.Now()
	for i := 0; ; i++ {
		if err := r.producerWait(i, start); err != nil {
			return r.pushDone(start), err
		}
		if r.TryPush(v) {
			return r.pushDone(start), nil
		}
	}
}

// PushN appends all of vs in order, waiting while the ring is full, and
// returns the nanoseconds it spent waiting, as Push. Each partial fill is
// one publish, so the consumer can start before all of vs fits. On an
// error (ErrClosed, ErrCanceled) a prefix of vs may have been pushed.
// Producer only.
func (r *SPSC[T]) PushN(vs []T) (blockedNs int64, err error) {
	n := r.TryPushN(vs)
	if n == len(vs) {
		return 0, nil
	}
	vs = vs[n:]
	if err := r.producerErr(); err != nil {
		return 0, err
	}
	start := time.Now()
	for i := 0; ; i++ {
		if err := r.producerWait(i, start); err != nil {
			return r.pushDone(start), err
		}
		if n := r.TryPushN(vs); n > 0 {
			vs = vs[n:]
			if len(vs) == 0 {
				return r.pushDone(start), nil
			}
			i = -1 // progress: spin again before the next park
		}
	}
}

func (r *SPSC[T]) pushDone(start time.Time) int64 {
	ns := int64(time.Since(start))
	r.pushBlocked.Add(ns)
	return ns
}

// Pop removes and returns the oldest value, waiting while the ring is
// empty. It returns ErrClosed once the ring is closed and drained, and
// ErrCanceled after Cancel. The time spent waiting is added to
// PopBlockedNs. Consumer only.
func (r *SPSC[T]) Pop() (T, error) {
	if v, ok := r.TryPop(); ok {
		return v, nil
	}
	start := time.Now()
	for i := 0; ; i++ {
		if err := r.consumerWait(i, start); err != nil {
			r.popBlocked.Add(int64(time.Since(start)))
			var zero T
			return zero, err
		}
		if v, ok := r.TryPop(); ok {
			r.popBlocked.Add(int64(time.Since(start)))
			return v, nil
		}
	}
}

// PopN waits until at least one value is available, then moves up to
// len(dst) of the oldest values into dst with one release and returns how
// many it moved. It returns (0, ErrClosed) once the ring is closed and
// drained, (0, ErrCanceled) after Cancel, and (0, nil) at once when dst is
// empty. The time spent waiting is added to PopBlockedNs. Consumer only.
func (r *SPSC[T]) PopN(dst []T) (int, error) {
	if len(dst) == 0 {
		return 0, nil
	}
	if n := r.TryPopN(dst); n > 0 {
		return n, nil
	}
	start := time.Now()
	for i := 0; ; i++ {
		if err := r.consumerWait(i, start); err != nil {
			r.popBlocked.Add(int64(time.Since(start)))
			return 0, err
		}
		if n := r.TryPopN(dst); n > 0 {
			r.popBlocked.Add(int64(time.Since(start)))
			return n, nil
		}
	}
}

// producerWait performs step i of the producer's wait (begun at start)
// after a failed push.
// It returns the error that ends the wait, if any.
func (r *SPSC[T]) producerWait(i int, start time.Time) error {
	if err := r.producerErr(); err != nil {
		return err
	}
	switch {
	case i < spinSteps:
	case time.Since(start) < r.yield:
		osYield()
	default:
		r.parkProducer()
	}
	return nil
}

// producerErr returns the error a push gets in the ring's state, if any.
func (r *SPSC[T]) producerErr() error {
	if s := r.state.Load(); s != 0 {
		if s&stateCanceled != 0 {
			return ErrCanceled
		}
		return ErrClosed
	}
	return nil
}

// consumerWait performs step i of the consumer's wait (begun at start)
// after a failed pop.
// It returns the error that ends the wait, if any.
func (r *SPSC[T]) consumerWait(i int, start time.Time) error {
	if s := r.state.Load(); s != 0 {
		if s&stateCanceled != 0 {
			return ErrCanceled
		}
		// Closed. Close was stored after the producer's last publish and we
		// have loaded it, so this load of tail sees every pushed value.
		if r.tail.Load() == r.head.Load() {
			return ErrClosed
		}
		return nil // values remain: pop them
	}
	switch {
	case i < spinSteps:
	case time.Since(start) < r.yield:
		osYield()
	default:
		r.parkConsumer()
	}
	return nil
}

// parkConsumer sleeps until the producer publishes, closes or cancels.
// It may return spuriously. See the argument above.
func (r *SPSC[T]) parkConsumer() {
	r.consumerParked.Store(1)                                  // C1
	if r.tail.Load() != r.head.Load() || r.state.Load() != 0 { // C2
		r.consumerParked.Store(0)
		return
	}
	<-r.cwake                 // C3
	r.consumerParked.Store(0) // a stale token left the flag set
}

// parkProducer sleeps until the consumer releases a slot or cancels. It
// may return spuriously.
func (r *SPSC[T]) parkProducer() {
	r.producerParked.Store(1)
	if r.tail.Load()-r.head.Load() < r.limit || r.state.Load() != 0 {
		r.producerParked.Store(0)
		return
	}
	<-r.pwake
	r.producerParked.Store(0)
}

// wakeConsumer wakes the consumer if it is parked (P2 above).
func (r *SPSC[T]) wakeConsumer() {
	if r.consumerParked.Swap(0) != 0 {
		select {
		case r.cwake <- struct{}{}:
		default: // a token is already there
		}
	}
}

// wakeProducer wakes the producer if it is parked.
func (r *SPSC[T]) wakeProducer() {
	if r.producerParked.Swap(0) != 0 {
		select {
		case r.pwake <- struct{}{}:
		default:
		}
	}
}
