package runtime

import "streamd/core"

// wmGen is the watermark generator (bounded out-of-orderness;
// docs/ARCHITECTURE.md, "Watermarks and pulses"): the one the single
// source stage runs and the one each channel of the exchange runs on its
// blocks (blockInput), the same function of the same sequence of points,
// so the two paths forward the same watermarks at the same points.
//
// The input is a sequence of points, each a block and the largest event
// time of that block so far (a source batch's end: the single source
// stage's, or a source worker's watermark candidate); blocks come in
// block order, and endBlock closes one. The watermark at a point is the
// largest event time so far less the bound less 1 ns — for a union
// (times, core.Interleaved) the minimum over its inputs (inputtimes.go)
// —, forwarded only when it rises. The single source stage runs it as
// one block whose points carry the largest event time so far; a channel
// of the exchange gives the block it reads and the block's candidate.
//
// It holds no clock and starts nothing: a caller's goroutine owns it.
type wmGen struct {
	bound int64 // EventTime.MaxOutOfOrder, ns
	// prevMax is the largest event time of the blocks before the current
	// one (core.NoTime: none yet); last is the last watermark forwarded.
	prevMax, last int64
	// times, for a union, is its per-input state (inputtimes.go); nil
	// otherwise.
	times *inputTimes
}

// newWMGen starts a generator with bound (ns) after watermark last (a
// restore's, or core.NoTime) for src's inputs (a union has one state per
// input; src unwrapped: a Replayable is no union).
func newWMGen(bound, last int64, src core.Source) wmGen {
	return wmGen{bound: bound, prevMax: core.NoTime, last: last, times: newInputTimes(src)}
}

// at is the point where block b's largest event time so far is m
// (core.NoTime: no record had an event time): it returns the watermark
// there, and whether it rose (and is to be forwarded).
func (g *wmGen) at(b int, m int64) (int64, bool) {
	wm, ok := max(g.prevMax, m)-g.bound-1, m != core.NoTime
	if g.times != nil {
		// A union, the one branch a point of another job pays.
		g.times.at(b)
		g.times.see(m)
		wm, ok = g.times.watermark(g.bound)
	}
	if !ok || wm <= g.last {
		return 0, false
	}
	g.last = wm
	return wm, true
}

// endBlock closes block b, whose largest event time was m (core.NoTime:
// none): the next block's points count it among the blocks before.
func (g *wmGen) endBlock(b int, m int64) {
	if g.times != nil {
		g.times.at(b)
		g.times.see(m)
	}
	g.prevMax = max(g.prevMax, m)
}
