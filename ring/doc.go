// Package ring provides SPSC, a bounded lock-free single-producer /
// single-consumer ring buffer that moves values (in streamd: *core.Batch
// pointers) between two pipeline stages running on different cores.
//
// # Roles
//
// Exactly one goroutine at a time is the producer: it alone may call
// TryPush, TryPushN, Push, PushN, Drained, SetLimit and Close. Exactly one
// goroutine at a time is the consumer: it alone may call TryPop, TryPopN,
// Pop and PopN. Cancel, Len, Cap, Pushed, Popped, PushBlockedNs,
// PopBlockedNs, Closed and Canceled may be called from any goroutine. The
// roles may move between goroutines only through a happens-before edge (a
// channel operation, a mutex, a WaitGroup ...). Breaking the role rule is
// a data race; the race detector reports it.
//
// # Invariants
//
//   - Capacity C is a power of two, C >= 2; New rounds a requested
//     capacity up to the next power of two.
//   - head (consumer index) and tail (producer index) are free-running
//     uint64 counters: 0 <= tail-head <= C at every instant either side can
//     observe. Slot i lives at buf[i & (C-1)]. A 64-bit counter does not
//     wrap in practice (at 10^10 items/s it would take 58 years).
//   - Slots [head, tail) belong to the consumer, slots [tail, head+C) to the
//     producer. A side writes the other side's slots never.
//   - The producer publishes with one atomic store of tail per TryPush /
//     TryPushN call (and per partial fill inside Push / PushN); the consumer
//     releases slots with one atomic store of head per pop call.
//   - Each side keeps a private cached copy of the other side's index and
//     re-reads the shared atomic only when the cached copy cannot satisfy
//     the call: no room (producer) or no value (consumer) for a single
//     push or pop, fewer than requested for a batch one.
//   - head, tail and the rarely-written flags (parked, closed, canceled) live
//     on separate 128-byte blocks, so the two sides never false-share a
//     cache line (128 rather than 64 defeats the adjacent-line prefetcher).
//   - Popped slots are cleared to the zero value, so the ring never keeps a
//     batch reachable after the consumer has taken it.
//   - FIFO: values are popped in the order they were pushed, each exactly
//     once.
//
// # Ownership
//
// A value handed to a successful push belongs to the consumer that pops it;
// the producer must not touch what it points to after the push (the push
// is the release, the pop the acquire: everything the producer wrote before
// the push is visible to the consumer after the pop).
//
// # Waiting
//
// The Try* methods never block. Push, PushN, Pop and PopN wait with a
// three-step strategy: a bounded spin re-reading the peer's index, then
// sched_yield(2) between tries until about 100 µs have passed (SetYield;
// 0 where threads outnumber cores), then parking on a per-side 1-buffered
// Go channel (wait.go says why these bounds). A side publishes and then
// checks (one atomic load) whether its peer is parked; only then does it
// pay for a channel send. The steady state therefore has no syscall, no
// lock and no channel operation per item. The lost-wakeup argument is in wait.go.
//
// # Ending
//
// Close is the producer's end-of-stream: the consumer receives every value
// pushed before Close, then ErrClosed. Cancel is the consumer's (or a
// supervisor's) abort: blocked and later calls on both sides return
// ErrCanceled, values still in the ring are not delivered, and no goroutine
// stays parked. Neither call blocks; both wake a parked peer.
//
// # Counters
//
// Pushed, Popped and Len derive from the indexes; PushBlockedNs and
// PopBlockedNs sum the nanoseconds the blocking calls spent waiting. They
// are single atomic loads and may be read by a controller at any time; each
// value is exact at some instant during the call but the values of two
// calls are not a consistent snapshot.
package ring
