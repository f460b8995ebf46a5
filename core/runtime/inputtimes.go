package runtime

import (
	"fmt"
	"strings"

	"streamd/core"
	"streamd/snapshot"
)

// Watermarks of a union (core.Interleaved; docs/ARCHITECTURE.md,
// "Determinism"). The runtime keeps one largest event time per input.
// After each batch of block b the watermark candidate is the minimum,
// over the inputs still being read at b (those whose last block is ≥ b:
// an exhausted input drops out), of each input's largest event time so
// far; the watermark is the candidate less the bound less 1, forwarded
// when it rises. No candidate while an input still being read has no
// event time yet.
//
// The single source stage meets the blocks in order through Next and
// reads b from the batch's first position (Pos[0] >> core.PosFileShift);
// a channel of the exchange takes blocks in block order (blockInput) and
// knows b. Both see the same batches of the same blocks in the same order
// whatever the source parallelism, so they compute the same watermarks.
// A single-input job has no inputTimes: its stages test for nil once per
// batch and go on as before.

// inputTimes is the watermark state of a union: each input's largest
// event time, and the block it stands at.
type inputTimes struct {
	src   core.Interleaved
	max   []int64 // by input, ns; core.NoTime: none yet
	last  []int   // by input: its last block (src.LastBlock)
	block int     // the block being read; -1 before the first
	in    int     // block's input
}

// newInputTimes returns the state at the start of src, or nil when src
// is not a union.
func newInputTimes(src core.Source) *inputTimes {
	il, ok := src.(core.Interleaved)
	if !ok {
		return nil
	}
	t := &inputTimes{src: il, max: make([]int64, il.Inputs()), last: make([]int, il.Inputs()), block: -1}
	for i := range t.max {
		t.max[i] = core.NoTime
		t.last[i] = il.LastBlock(i)
	}
	return t
}

// at moves the state to block b (blocks come in order; cheap when b is
// the current one).
func (t *inputTimes) at(b int) {
	if b != t.block {
		t.block, t.in = b, t.src.BlockInput(b)
	}
}

// see notes that the current block's input has reached event time m (its
// block's largest so far, or the block's largest at its end).
func (t *inputTimes) see(m int64) { t.max[t.in] = max(t.max[t.in], m) }

// candidate is the minimum over the inputs still being read at the
// current block of their largest event times; core.NoTime when one of
// them has none yet.
func (t *inputTimes) candidate() int64 {
	c := int64(core.MaxWatermark)
	for i, m := range t.max {
		if t.last[i] >= t.block {
			c = min(c, m)
		}
	}
	return c
}

// watermark is the watermark after a batch given the bound (ns), and
// whether there is one.
func (t *inputTimes) watermark(bound int64) (int64, bool) {
	c := t.candidate()
	if c == core.NoTime {
		return 0, false
	}
	return c - bound - 1, true
}

// String is the state as a checkpoint records it (Extra
// "max_event_times"): the inputs' largest event times, space-separated.
func (t *inputTimes) String() string {
	var b strings.Builder
	for i, m := range t.max {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprint(&b, m)
	}
	return b.String()
}

// clone copies the largest event times (for a barrier or a channel added
// by a live change).
func (t *inputTimes) clone() []int64 { return append([]int64(nil), t.max...) }

// restore takes the largest event times a checkpoint recorded.
func (t *inputTimes) restore(meta *snapshot.Metadata) error {
	s, ok := meta.Extra["max_event_times"]
	if !ok {
		return fmt.Errorf("%w: it records one largest event time, and this job reads a union of %d inputs", ErrCheckpointMismatch, len(t.max))
	}
	f := strings.Fields(s)
	if len(f) != len(t.max) {
		return fmt.Errorf("%w: it records the event times of %d inputs, and this job's union has %d", ErrCheckpointMismatch, len(f), len(t.max))
	}
	for i, v := range f {
		if _, err := fmt.Sscan(v, &t.max[i]); err != nil {
			return fmt.Errorf("checkpoint: max_event_times %q: %w", s, err)
		}
	}
	return nil
}
