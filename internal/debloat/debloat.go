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
// Bound in records (Piece): a slot holds up to Slot records (a batch), so
// at a consumer slow per record even Min slots can hold many times the
// target. With Slot set the producer also tells the consumer's counts of
// data slots and records taken (ObserveRecords), and each window under
// backpressure also decides the piece: the most records a data slot
// should hold for Min slots to take about Target (Flink's FLIP-183
// debloats the buffer size for the same reason). The producer cuts what
// it pushes into pieces of that size.
//
// Cutting helps only where a slot's time grows with its records. The
// controller decides once per sample (windows under backpressure
// holding at least 4 data slots or spanning 8 targets): it fits the time
// of a data slot as a + b × its records (a: the consumer's cost per
// slot, b: per record) from two samples whose slots held numbers of
// records at least 1.5 apart, or, before it has two, takes a = 0 (all
// of it per record). The piece is then
//
//	(Target/Min − a) ÷ b   records, at least max(4a/b, Least, x/4),
//
// x being the records per slot of the sample: a piece's cost per slot
// is at most a quarter of its records' (cutting costs at most a fifth of
// the throughput), and a decision cuts at most four times finer than the
// sample, so that a consumer whose cost is per slot (b ≈ 0, which the
// next sample's fit shows) is cut for one sample only. A piece of Slot
// or more is none (0: whole batches). Windows without backpressure
// double it. A fit holds for 32 samples (forget), then the cost is taken
// as per record again: a consumer whose cost changes is probed again
// (one sample cut, every 32 while the cost per slot dominates).
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
	// Slot, when > 0, is the most records a data slot holds, and turns on
	// the bound in records (ObserveRecords, Piece); 0: slots only.
	Slot int
	// Least is the smallest piece, records (0: 1).
	Least int

	started bool
	t0      int64  // the window's start, ns
	popped0 uint64 // the consumer's count at t0
	blocked int64  // ns the producer was blocked in the window
	starved int64  // the consumer's starved total at t0 (ObserveStarved)
	limit   int

	// The bound in records: the consumer's counts at t0, the piece
	// decided (0: none), the last window's records and ns per data slot
	// (px 0: none) and the fitted cost per slot and per record, ns.
	data0, recs0 uint64
	piece        int
	px, py       float64
	a, b         float64
	fitted       bool
	age          int // samples since the last fit
	// The sample being gathered: data slots, records and ns of the
	// windows under backpressure since the last decision of the piece.
	ss, sr, sd float64
}

// A sample (the windows one decision of the piece is made from) holds
// at least sampleSlots data slots or spans sampleTargets targets: a
// slot's time is noisy (a lookup's latency), and one window may hold a
// single slot.
const (
	sampleSlots   = 4
	sampleTargets = 8
)

// forget is how many samples a fit holds before the controller takes
// the cost as per record again (and so probes, when cutting would
// follow).
const forget = 32

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
	return c.ObserveRecords(now, popped, 0, 0, blockedNs, starvedNs)
}

// ObserveRecords is ObserveStarved for a producer that also knows data
// and records: the consumer's running totals of data slots (slots holding
// records) and of records it has finished: those of the slots it took
// before the one it works on, so that a window's time and its slots
// match (with a few slots a window, the slot in hand would skew both). With Slot set, the
// decisions also set Piece. A producer whose slots' sizes vary cannot
// derive them from popped; the runtime counts its pushes
// (runtime/debloat.go, tally).
func (c *Controller) ObserveRecords(now int64, popped, data, records uint64, blockedNs, starvedNs int64) int {
	if !c.started {
		// The push that found the ring full opens the first window; its
		// own wait began before it.
		c.started, c.t0, c.popped0, c.starved = true, now-blockedNs, popped, starvedNs
		c.data0, c.recs0 = data, records
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
		if c.Slot > 0 && data > c.data0 && records > c.recs0 {
			c.ss += float64(data - c.data0)
			c.sr += float64(records - c.recs0)
			c.sd += float64(span)
			if c.ss >= sampleSlots || c.sd >= sampleTargets*float64(c.Target) {
				c.cut(c.ss, c.sr, c.sd)
				c.ss, c.sr, c.sd = 0, 0, 0
			}
		}
	} else {
		c.limit *= 2
		c.piece *= 2
		c.ss, c.sr, c.sd = 0, 0, 0 // the consumer kept up: its time is not its cost
	}
	if c.piece >= c.Slot {
		c.piece = 0
	}
	c.limit = min(max(c.limit, c.Min), c.Max)
	c.t0, c.popped0, c.blocked, c.starved = now, popped, 0, starvedNs
	c.data0, c.recs0 = data, records
	return c.limit
}

// cut decides the piece after a window under backpressure in which the
// consumer took s data slots holding r records in d ns.
func (c *Controller) cut(s, r, d float64) {
	x, y := r/s, d/s // records and ns per data slot
	c.age++
	switch {
	case c.px > 0 && max(x, c.px) >= 1.5*min(x, c.px):
		// Two samples of different slot sizes: the line through them.
		c.b = (y - c.py) / (x - c.px)
		c.a, c.fitted, c.age = y-c.b*x, true, 0
		if c.b < 0 { // noise around a cost per slot only
			c.a, c.b = y, 0
		}
	case c.fitted && c.age < forget:
		if y > c.a { // the cost per slot kept, per record followed
			c.b = (y - c.a) / x
		}
	default:
		c.a, c.b, c.fitted = 0, y/x, false
	}
	c.px, c.py = x, y
	if c.a < 0 { // noise: a slot costs no less than nothing
		c.a, c.b = 0, y/x
	}
	if c.b <= 0 { // a slot costs the same whatever it holds
		c.piece = 0
		return
	}
	want := float64(c.Target) / float64(c.Min) // ns a slot may take
	p := (want - c.a) / c.b
	p = max(p, 4*c.a/c.b, float64(max(c.Least, 1)), x/4)
	if p >= float64(c.Slot) {
		c.piece = 0
		return
	}
	c.piece = int(math.Ceil(p))
}

// Piece is the most records a data slot should hold, decided last: 0
// (whole batches) when Slot is 0, before the first window under
// backpressure, or when Min slots of Slot records take no more than
// Target or cutting cannot help (see Controller).
func (c *Controller) Piece() int { return c.piece }

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
