package runtime

// SplitterSlots returns, for each channel of the single source stage's
// splitter, the batches it handed the channel (pieces: what the channel's
// loop sees) and the ring slots they took (fewer with adaptive batching).
// Call it after the run.
func SplitterSlots(l Live) (pieces, slots []uint64) {
	sp := l.r.splitter
	if sp == nil {
		return nil, nil
	}
	for c, rg := range sp.rings {
		pieces = append(pieces, sp.pushed[c])
		slots = append(slots, rg.Pushed())
	}
	return pieces, slots
}

// OutputRingLen is, for a run with output workers and a writer stage, how
// many values wait in the merger's ring to each worker (in) and in each
// worker's ring to the writer (out), by worker; nil without workers. For
// tests that drive the output side step by step: a test hook, not API.
// (A ring's effective capacity is its producer's alone to read.)
func (l Live) OutputRingLen() (in, out []int) {
	o := l.r.out
	if o == nil {
		return nil, nil
	}
	for _, rg := range o.in {
		in = append(in, rg.Len())
	}
	for _, rg := range o.out {
		out = append(out, rg.Len())
	}
	return in, out
}

// ForcePieces makes the run's source stage or workers cut every source
// batch into pieces of k records per channel (cut.go), with or without
// backpressure: a test knob.
func ForcePieces(k int) Option { return func(o *options) { o.forcePieces = k } }

// AtEndOfInput says, for a run with source workers, whether channel c has
// read every block (it steps the end-of-input protocol, exchange.endBarrier)
// and how many batches wait in the rings from the channels to the merger:
// for tests that hold a run at a point after the end of its input. A test
// hook, not API.
func AtEndOfInput(l Live, c int) (atEnd bool, toMerger int) {
	x := l.r.x
	if x == nil {
		return false, 0
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, rg := range l.r.mergerOuts {
		toMerger += rg.Len()
	}
	return x.tail.AtEnd(c), toMerger
}
