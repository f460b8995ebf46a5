package ring

import (
	"errors"
	"fmt"
	"math/bits"
	"sync/atomic"
	"time"
)

// ErrClosed is returned by Pop and PopN once the producer has called Close
// and every value pushed before Close has been popped, and by Push and
// PushN called after Close. It is the normal end of a stream, not a
// failure.
var ErrClosed = errors.New("ring: closed")

// ErrCanceled is returned by the blocking methods of both sides after
// Cancel: the consumer (or a supervisor) has given up on the ring, values
// still in it will not be delivered.
var ErrCanceled = errors.New("ring: canceled")

// MaxCap is the largest capacity New accepts.
const MaxCap = 1 << 30

// blockBytes separates the fields written by different sides. 128 rather
// than 64 keeps them apart even when the CPU prefetches cache lines in
// aligned pairs (Intel's adjacent-line prefetcher).
const blockBytes = 128

// State bits.
const (
	stateClosed   = 1 << 0
	stateCanceled = 1 << 1
)

// SPSC is a bounded single-producer / single-consumer FIFO ring of T. See
// the package documentation for the roles, the invariants and the
// memory-ordering guarantee. The zero value is not usable: create rings
// with New. An SPSC must not be copied.
type SPSC[T any] struct {
	_ [blockBytes]byte

	// Read-only after New: shared freely by both sides.
	buf   []T           // len(buf) == mask+1, a power of two
	mask  uint64        // capacity-1
	pwake chan struct{} // a parked producer waits here; 1-buffered
	cwake chan struct{} // a parked consumer waits here; 1-buffered
	_     [blockBytes - 48]byte

	// Producer block: written by the producer only.
	tail        atomic.Uint64 // next slot to fill; the publish
	headCache   uint64        // producer's last view of head
	pushBlocked atomic.Int64  // ns spent blocked in Push/PushN, total
	// yield is how long a blocked side yields before it parks (see
	// wait.go); set before the ring is shared.
	yield time.Duration
	// limit is the effective capacity (SetLimit), in [1, mask+1]: the
	// producer treats the ring as full when it holds limit values.
	limit uint64
	_     [blockBytes - 40]byte

	// Consumer block: written by the consumer only.
	head       atomic.Uint64 // next slot to take; the release
	tailCache  uint64        // consumer's last view of tail
	popBlocked atomic.Int64  // ns spent blocked in Pop/PopN, total
	_          [blockBytes - 24]byte

	// Flags block: read on every operation, written only when a side parks
	// or the ring is closed or canceled, so it stays in the shared state in
	// both caches in the steady state.
	consumerParked atomic.Uint32
	producerParked atomic.Uint32
	state          atomic.Uint32 // stateClosed | stateCanceled
	_              [blockBytes - 12]byte
}

// New returns an empty ring that holds at least capacity values: the
// capacity is rounded up to the next power of two (so that an index maps to
// a slot with a mask). It returns an error when capacity < 2 or capacity >
// MaxCap.
func New[T any](capacity int) (*SPSC[T], error) {
	if capacity < 2 || capacity > MaxCap {
		return nil, fmt.Errorf("ring: capacity %d out of range [2, %d]", capacity, MaxCap)
	}
	c := 1 << bits.Len(uint(capacity-1))
	return &SPSC[T]{
		buf:   make([]T, c),
		mask:  uint64(c - 1),
		pwake: make(chan struct{}, 1),
		cwake: make(chan struct{}, 1),
		yield: yieldFor,
		limit: uint64(c),
	}, nil
}

// SetYield sets how long a blocked Push or Pop keeps yielding its thread
// (sched_yield) before it parks, default 100 µs (see wait.go). When the
// process has more busy threads than cores, yielding steals time from the
// peer it waits for: 0 (spin, then park) is better. It sets both sides.
// Call it before the ring is shared (it is a plain field that both sides
// read while they wait).
func (r *SPSC[T]) SetYield(d time.Duration) { r.yield = d }

// Cap returns the capacity: the most values the ring holds at once.
func (r *SPSC[T]) Cap() int { return len(r.buf) }

// SetLimit sets the effective capacity: from now on the producer's pushes
// treat the ring as full when it holds n values (n is clamped to [1,
// Cap()]; New starts at Cap()). Lowering it below what the ring holds
// drops nothing: pushes wait until the consumer has taken the ring below
// n. It bounds the values in flight between two stages (buffer
// debloating: core/runtime/debloat.go) at no cost to a push, which
// compares with the limit instead of the capacity. Producer only.
func (r *SPSC[T]) SetLimit(n int) {
	r.limit = uint64(min(max(n, 1), len(r.buf)))
}

// Limit returns the effective capacity SetLimit set (Cap() by default).
// Producer only.
func (r *SPSC[T]) Limit() int { return int(r.limit) }

// Len returns the number of values in the ring at some instant during the
// call, in [0, Cap()]. Any goroutine may call it.
func (r *SPSC[T]) Len() int {
	h := r.head.Load() // head first: the later tail is then >= h
	n := r.tail.Load() - h
	return int(min(n, r.mask+1))
}

// Drained reports whether the consumer has taken every value pushed so
// far: the ring is empty, and a consumer that wants more is waiting or
// about to. Producer only. It reads the shared head only when the
// producer's cached view of it says the ring is not empty, and refreshes
// that view, so asking a drained ring costs no shared read; asking a busy
// one costs one atomic load. A splitter asks it once per source batch to
// hand a gathered sub-batch to a channel that waits for it
// (core/runtime/batching.go).
func (r *SPSC[T]) Drained() bool {
	t := r.tail.Load()
	if t == r.headCache {
		return true
	}
	r.headCache = r.head.Load()
	return t == r.headCache
}

// Pushed returns the number of values pushed since New. Any goroutine may
// call it; it is one atomic load. Pushed()-Popped() is not atomic: use Len.
func (r *SPSC[T]) Pushed() uint64 { return r.tail.Load() }

// Popped returns the number of values popped since New. Any goroutine may
// call it; it is one atomic load.
func (r *SPSC[T]) Popped() uint64 { return r.head.Load() }

// PushBlockedNs returns the total nanoseconds the producer has spent blocked
// in Push and PushN since New (the sum of the values they returned). Any
// goroutine may call it.
func (r *SPSC[T]) PushBlockedNs() int64 { return r.pushBlocked.Load() }

// PopBlockedNs returns the total nanoseconds the consumer has spent blocked
// in Pop and PopN (waiting for input) since New. Any goroutine may call it.
func (r *SPSC[T]) PopBlockedNs() int64 { return r.popBlocked.Load() }

// Closed reports whether Close has been called. Values may remain to be
// popped. Any goroutine may call it.
func (r *SPSC[T]) Closed() bool { return r.state.Load()&stateClosed != 0 }

// Canceled reports whether Cancel has been called. Any goroutine may call it.
func (r *SPSC[T]) Canceled() bool { return r.state.Load()&stateCanceled != 0 }

// TryPush appends v if there is room and reports whether it did. It never
// blocks. It returns false when the ring is full, closed or canceled (Push
// tells which). On true, v belongs to the consumer. Producer only.
func (r *SPSC[T]) TryPush(v T) bool {
	if r.state.Load() != 0 {
		return false
	}
	t := r.tail.Load()
	if t-r.headCache >= r.limit { // full according to the cache
		r.headCache = r.head.Load()
		if t-r.headCache >= r.limit {
			return false
		}
	}
	r.buf[t&r.mask] = v
	r.tail.Store(t + 1) // publish
	if r.consumerParked.Load() != 0 {
		r.wakeConsumer()
	}
	return true
}

// TryPushN appends as many leading values of vs as fit, with one publish,
// and returns how many it appended (0 when the ring is full, closed or
// canceled, or vs is empty). It never blocks. The ring copies the values;
// vs may be reused at once, but what the appended values point to belongs
// to the consumer. Producer only.
func (r *SPSC[T]) TryPushN(vs []T) int {
	if len(vs) == 0 || r.state.Load() != 0 {
		return 0
	}
	t := r.tail.Load()
	c := r.limit
	used := t - r.headCache
	if used >= c || c-used < uint64(len(vs)) {
		r.headCache = r.head.Load()
		if used = t - r.headCache; used >= c {
			return 0 // full (or above a lowered limit)
		}
	}
	free := c - used
	n := int(min(free, uint64(len(vs))))
	i := int(t & r.mask)
	k := copy(r.buf[i:], vs[:n])
	copy(r.buf, vs[k:n])
	r.tail.Store(t + uint64(n)) // publish
	if r.consumerParked.Load() != 0 {
		r.wakeConsumer()
	}
	return n
}

// TryPop removes and returns the oldest value; ok is false when the ring is
// empty or canceled (a closed ring still yields its values). It never
// blocks. Consumer only.
func (r *SPSC[T]) TryPop() (v T, ok bool) {
	if r.state.Load()&stateCanceled != 0 {
		return v, false
	}
	h := r.head.Load()
	if h == r.tailCache { // empty according to the cache
		r.tailCache = r.tail.Load()
		if h == r.tailCache {
			return v, false
		}
	}
	i := h & r.mask
	v = r.buf[i]
	var zero T
	r.buf[i] = zero     // do not keep the value reachable
	r.head.Store(h + 1) // release the slot
	if r.producerParked.Load() != 0 {
		r.wakeProducer()
	}
	return v, true
}

// TryPopN moves up to len(dst) of the oldest values into dst, with one
// release, and returns how many it moved: all that are available when dst
// is large enough. It returns 0 when the ring is empty or canceled, or dst
// is empty. It never blocks. Consumer only.
func (r *SPSC[T]) TryPopN(dst []T) int {
	if len(dst) == 0 || r.state.Load()&stateCanceled != 0 {
		return 0
	}
	h := r.head.Load()
	avail := r.tailCache - h
	if avail < uint64(len(dst)) {
		r.tailCache = r.tail.Load()
		avail = r.tailCache - h
		if avail == 0 {
			return 0
		}
	}
	n := int(min(avail, uint64(len(dst))))
	i := int(h & r.mask)
	first := r.buf[i:min(i+n, len(r.buf))]
	k := copy(dst, first)
	clear(first)
	if k < n {
		wrapped := r.buf[:n-k]
		copy(dst[k:], wrapped)
		clear(wrapped)
	}
	r.head.Store(h + uint64(n)) // release the slots
	if r.producerParked.Load() != 0 {
		r.wakeProducer()
	}
	return n
}

// Close marks the end of the stream. The consumer pops every value pushed
// before Close, then Pop and PopN return ErrClosed; a parked consumer is
// woken. Push, PushN return ErrClosed (TryPush, TryPushN false) after
// Close. Close never blocks; calling it again does nothing. Producer only:
// a push racing with Close from another goroutine could be lost.
func (r *SPSC[T]) Close() {
	r.state.Or(stateClosed)
	r.wakeConsumer()
}

// Cancel aborts the ring from the consumer's side, e.g. when the engine
// stops on an error. Blocked and later Push, PushN, Pop and PopN return
// ErrCanceled; both sides are woken if parked; values still in the ring
// are not delivered (they stay reachable until the ring itself is
// garbage). Cancel never blocks, may be called from any goroutine, more
// than once, and after Close.
func (r *SPSC[T]) Cancel() {
	r.state.Or(stateCanceled)
	r.wakeProducer()
	r.wakeConsumer()
}
