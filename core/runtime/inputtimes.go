package runtime

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"streamd/core"
	"streamd/core/runtime/align"
	"streamd/snapshot"
)

// Watermarks of a union (core.Interleaved; docs/ARCHITECTURE.md,
// "Determinism", several inputs): a driver of align.Inputs, the state
// machine of a stage with several inputs. Each input's watermark there is
// its largest event time so far; after each batch of block b the
// union's watermark is align.Inputs' output less the bound less 1,
// forwarded when it rises. An input ends when the interleave passes its
// last block (src.LastBlock), so it drops out of the minimum; none is
// ever idle (files); there is no watermark while an input still being
// read has no event time yet. A union is one stream whose barrier is one
// marker at one point of the interleave, so no input is ever held.
//
// The single source stage meets the blocks in order through Next and
// reads b from the batch's first position (Pos[0] >> core.PosFileShift);
// a channel of the exchange takes blocks in block order (blockInput) and
// knows b. Both see the same batches of the same blocks in the same order
// whatever the source parallelism, so they compute the same watermarks.
// A single-input job has no inputTimes: its stages test for nil once per
// batch and go on as before.

// inputTimes is the watermark state of a union: the inputs' state
// machine, and the block it stands at.
type inputTimes struct {
	src   core.Interleaved
	a     *align.Inputs
	last  []int // by input: its last block (src.LastBlock)
	ends  []int // the inputs by last block: the order in which they end
	ended int   // ends[:ended] have ended
	block int   // the block being read; -1 before the first
	in    int   // block's input
}

// newInputTimes returns the state at the start of src, or nil when src
// is not a union.
func newInputTimes(src core.Source) *inputTimes {
	il, ok := src.(core.Interleaved)
	if !ok {
		return nil
	}
	n := il.Inputs()
	t := &inputTimes{src: il, a: align.New(n), last: make([]int, n), ends: make([]int, n), block: -1}
	for i := range t.last {
		t.last[i], t.ends[i] = il.LastBlock(i), i
	}
	slices.SortStableFunc(t.ends, func(i, j int) int { return cmp.Compare(t.last[i], t.last[j]) })
	return t
}

// at moves the state to block b (blocks come in order; cheap when b is
// the current one): the inputs whose last block is before b end.
func (t *inputTimes) at(b int) {
	if b == t.block {
		return
	}
	t.block, t.in = b, t.src.BlockInput(b)
	for t.ended < len(t.ends) && t.last[t.ends[t.ended]] < b {
		t.a.End(t.ends[t.ended]) // each once, in order: no error
		t.ended++
	}
}

// see notes that the current block's input has reached event time m (its
// block's largest so far, or the block's largest at its end).
func (t *inputTimes) see(m int64) {
	t.a.Watermark(t.in, m) // block b's input has not ended: no error
}

// watermark is the watermark after a batch given the bound (ns), and
// whether there is one.
func (t *inputTimes) watermark(bound int64) (int64, bool) {
	c, ok := t.a.Output()
	if !ok {
		return 0, false
	}
	return c - bound - 1, true
}

// String is the state as a checkpoint records it (Extra
// "max_event_times"): the inputs' largest event times, space-separated.
func (t *inputTimes) String() string {
	var b strings.Builder
	for i := range t.last {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprint(&b, t.a.InputWatermark(i))
	}
	return b.String()
}

// clone copies the largest event times (for a barrier or a channel added
// by a live change).
func (t *inputTimes) clone() []int64 {
	m := make([]int64, len(t.last))
	for i := range m {
		m[i] = t.a.InputWatermark(i)
	}
	return m
}

// set takes the largest event times m (clone's, or a checkpoint's) before
// the first block; nil leaves them as they are.
func (t *inputTimes) set(m []int64) {
	if m != nil {
		t.a.SetWatermarks(m)
	}
}

// restore takes the largest event times a checkpoint recorded.
func (t *inputTimes) restore(meta *snapshot.Metadata) error {
	s, ok := meta.Extra["max_event_times"]
	if !ok {
		return fmt.Errorf("%w: it records one largest event time, and this job reads a union of %d inputs", ErrCheckpointMismatch, len(t.last))
	}
	f := strings.Fields(s)
	if len(f) != len(t.last) {
		return fmt.Errorf("%w: it records the event times of %d inputs, and this job's union has %d", ErrCheckpointMismatch, len(f), len(t.last))
	}
	m := make([]int64, len(f))
	for i, v := range f {
		if _, err := fmt.Sscan(v, &m[i]); err != nil {
			return fmt.Errorf("checkpoint: max_event_times %q: %w", s, err)
		}
	}
	t.set(m)
	return nil
}
