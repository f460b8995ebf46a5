// Package debloat bounds the data in flight between two stages by time
// (buffer debloating, after Flink's FLIP-183): a ring's effective capacity
// follows the measured throughput of its consumer, so that draining a
// full ring takes about a target time. A checkpoint barrier queued behind
// the data then waits about that long per ring, whatever the ring size and
// however slow the consumer.
//
// Controller is a pure function of what its caller observes (a time, the
// consumer's count of values taken, the time the producer spent blocked):
// no clock, no goroutine. The runtime feeds it on its producers' slow path
// only (a push that found the ring at its limit), so the hot path pays
// nothing while there is no backpressure.
package debloat

import "math"

// Controller is one ring's effective capacity, in slots (values the ring
// holds), driven by its producer. The zero value is not usable: set
// Target, Min and Max, then call Observe after every push that waited.
//
// Each measurement window (at least Window ns, default Target) ends with a
// decision:
//   - backpressure (the producer was blocked for at least 1/8 of the
//     window): the consumer had input all along, so what it took over the
//     window is its throughput; the limit becomes throughput × Target,
//     rounded up, within [Min, Max];
//   - otherwise, or when the consumer waited for input for at least 1/8
//     of the window (ObserveStarved), the limit doubles (up to Max): the
//     consumer keeps up, and a tight limit would only turn bursts into
//     blocking.
//
// Slow start: a producer may Seed a small limit before its first push (the
// runtime seeds its floor), so that nothing is in flight beyond it before
// anything was measured; without backpressure the doublings take the
// limit to Max within log2(Max/seed) windows.
//
// Only the producer calls it; it is not safe for concurrent use.
type Controller struct {
	// Target is the time a full ring should take to drain, ns (> 0).
	Target int64
	// Min and Max bound the limit, in slots (1 ≤ Min ≤ Max; Max is the
	// ring's capacity).
	Min, Max int
	// Window is the shortest measurement window, ns (0: Target).
	Window int64

	started bool
	t0      int64  // the window's start, ns
	popped0 uint64 // the consumer's count at t0
	blocked int64  // ns the producer was blocked in the window
	starved int64  // the consumer's starved total at t0 (ObserveStarved)
	limit   int
}

// Observe takes, after a push that waited: now (ns, the caller's clock),
// popped (the consumer's total count of values taken from the ring) and
// blockedNs (how long that push waited, ns, on the same clock). It returns
// the ring's effective capacity from now on, in [Min, Max].
func (c *Controller) Observe(now int64, popped uint64, blockedNs int64) int {
	return c.ObserveStarved(now, popped, blockedNs, 0)
}

// ObserveStarved is Observe for a producer that also knows starvedNs: the
// consumer's running total of the time it waited for input (ns, same
// clock), on this ring or on others it reads. A window in which that
// total grew by at least 1/8 of it is no backpressure whatever the
// producer saw: the consumer kept up, and was taking from another ring
// while this one waited (the exchange's rings to one channel, read one
// block at a time), so what it took from this one is no measure of its
// throughput.
func (c *Controller) ObserveStarved(now int64, popped uint64, blockedNs, starvedNs int64) int {
	if !c.started {
		// The push that found the ring full opens the first window; its
		// own wait began before it.
		c.started, c.t0, c.popped0, c.starved = true, now-blockedNs, popped, starvedNs
		if c.limit == 0 { // not seeded
			c.limit = c.Max
		}
	}
	c.blocked += blockedNs
	span := now - c.t0
	w := c.Window
	if w <= 0 {
		w = c.Target
	}
	if span < w {
		return c.Limit()
	}
	if c.blocked*8 >= span && (starvedNs-c.starved)*8 < span {
		taken := popped - c.popped0
		// taken/span slots per ns × Target ns, rounded up.
		c.limit = int(math.Ceil(float64(taken) * float64(c.Target) / float64(span)))
	} else {
		c.limit *= 2
	}
	c.limit = min(max(c.limit, c.Min), c.Max)
	c.t0, c.popped0, c.blocked, c.starved = now, popped, 0, starvedNs
	return c.limit
}

// Seed sets the limit in force until the next decision, within [Min,
// Max], and returns it: a producer that starts pushing to a ring again
// takes the limit measured for the same consumer on another ring (the
// source workers' rings to one channel, which it drains one at a time),
// instead of filling the ring to Max before its own first decision.
func (c *Controller) Seed(limit int) int {
	c.limit = min(max(limit, c.Min), c.Max)
	return c.limit
}

// Limit is the effective capacity decided last (Max before the first
// decision).
func (c *Controller) Limit() int {
	if c.limit == 0 {
		return c.Max
	}
	return c.limit
}
