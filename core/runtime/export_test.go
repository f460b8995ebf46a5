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
