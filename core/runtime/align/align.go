package align

import (
	"errors"
	"fmt"
	"math"
)

// NoTime is a watermark not known yet (core.NoTime).
const NoTime = math.MinInt64

// Errors of a driver that breaks the protocol: they mean a bug upstream,
// and the stage fails.
var (
	// ErrHeld is data or an end from an input held for a barrier: the
	// driver read an input it was told not to.
	ErrHeld = errors.New("align: read a held input")
	// ErrEnded is an event from an input that ended.
	ErrEnded = errors.New("align: event from an ended input")
	// ErrEpoch is a barrier out of order: an epoch delivered twice by one
	// input, one other than the epoch aligning, or one not above the last
	// completed.
	ErrEpoch = errors.New("align: barrier out of order")
)

// Inputs is the alignment and watermark state of n inputs (0 … n−1). The
// zero value is not usable: call New.
type Inputs struct {
	in    []input
	live  int   // inputs not ended
	epoch int64 // the barrier aligning; 0 when none
	done  int64 // the last epoch completed
	held  int   // live inputs that delivered epoch
	out   int64 // the output watermark; NoTime before the first
	turn  int   // where Next starts looking
}

// input is one input's state.
type input struct {
	wm    int64 // its watermark; NoTime before the first
	held  bool  // it delivered the aligning barrier
	ended bool
	idle  bool // the driver said so, and no data or watermark came since
	// behind: back from idleness with its watermark below out; it counts
	// in the minimum again once wm ≥ out (Flink's realignment).
	behind bool
	// counts: in the output's minimum (not ended, idle or behind), kept
	// with the three so that a watermark and Output test one flag.
	counts bool
}

// New returns the state of n ≥ 1 inputs at the start: none held, none
// ended, no watermark.
func New(n int) *Inputs {
	if n < 1 {
		panic("align: a stage needs an input")
	}
	a := &Inputs{in: make([]input, n), live: n, out: NoTime}
	for i := range a.in {
		a.in[i].wm, a.in[i].counts = NoTime, true
	}
	return a
}

// Len is the number of inputs.
func (a *Inputs) Len() int { return len(a.in) }

// Data notes data from input i with largest event time t (NoTime: none),
// and reports whether it is late: t at or below the output watermark.
// Data ends the input's idleness. Errors: ErrHeld, ErrEnded.
func (a *Inputs) Data(i int, t int64) (late bool, err error) {
	in := &a.in[i]
	switch {
	case in.ended:
		return false, fmt.Errorf("%w: data on input %d", ErrEnded, i)
	case in.held:
		return false, fmt.Errorf("%w: input %d delivered barrier %d", ErrHeld, i, a.epoch)
	}
	a.active(i)
	return t != NoTime && t <= a.out, nil
}

// Watermark notes input i's watermark wm; an input's watermark never goes
// back (a lower one is ignored). It ends the input's idleness. A held input
// may deliver one: it was read up to its barrier. Errors: ErrEnded.
func (a *Inputs) Watermark(i int, wm int64) error {
	in := &a.in[i]
	if in.counts { // the path of every watermark of an input in the minimum
		in.wm = max(in.wm, wm)
		return nil
	}
	if in.ended {
		return fmt.Errorf("%w: watermark on input %d", ErrEnded, i)
	}
	in.wm = max(in.wm, wm)
	a.active(i)
	return nil
}

// active ends input i's idleness: back below the output watermark, it is
// behind until its watermark catches up.
func (a *Inputs) active(i int) {
	in := &a.in[i]
	if in.idle {
		in.idle, in.behind = false, in.wm < a.out || in.wm == NoTime
	}
	if in.behind && in.wm >= a.out && in.wm != NoTime {
		in.behind = false
	}
	in.counts = !in.ended && !in.idle && !in.behind
}

// Idle notes that input i had no data for a while (the driver decides how
// long, on its clock): its watermark leaves the minimum until it has data
// or a watermark again. Idleness does not excuse it from a barrier.
func (a *Inputs) Idle(i int) {
	if !a.in[i].ended {
		a.in[i].idle, a.in[i].counts = true, false
	}
}

// Barrier notes barrier epoch e from input i. It returns true when e is
// complete (every live input delivered it): the driver sends it downstream
// then, once, and every input is released. Otherwise input i is held.
// Errors: ErrEnded, ErrEpoch.
func (a *Inputs) Barrier(i int, e int64) (complete bool, err error) {
	in := &a.in[i]
	switch {
	case in.ended:
		return false, fmt.Errorf("%w: barrier %d on input %d", ErrEnded, e, i)
	case in.held:
		return false, fmt.Errorf("%w: input %d delivered barrier %d twice", ErrEpoch, i, e)
	case a.epoch != 0 && e != a.epoch:
		return false, fmt.Errorf("%w: barrier %d on input %d while %d aligns", ErrEpoch, e, i, a.epoch)
	case e <= a.done:
		return false, fmt.Errorf("%w: barrier %d on input %d after %d completed", ErrEpoch, e, i, a.done)
	}
	a.epoch = e
	in.held = true
	a.held++
	return a.complete(), nil
}

// End notes the end of input i: it leaves the watermark's minimum and
// counts as aligned. It returns the epoch its end completes, or 0. A held
// input cannot end: it is not read, so its end comes after the barrier
// completes. Errors: ErrEnded, ErrHeld.
func (a *Inputs) End(i int) (complete int64, err error) {
	in := &a.in[i]
	switch {
	case in.ended:
		return 0, fmt.Errorf("%w: input %d ended twice", ErrEnded, i)
	case in.held:
		return 0, fmt.Errorf("%w: end of input %d, which delivered barrier %d", ErrHeld, i, a.epoch)
	}
	in.ended, in.idle, in.behind, in.counts = true, false, false, false
	a.live--
	if e := a.epoch; e != 0 && a.complete() {
		return e, nil
	}
	return 0, nil
}

// complete closes the aligning epoch when every live input holds it.
func (a *Inputs) complete() bool {
	if a.epoch == 0 || a.held < a.live {
		return false
	}
	for i := range a.in {
		a.in[i].held = false
	}
	a.done, a.epoch, a.held = a.epoch, 0, 0
	return true
}

// Held reports whether input i is held: it delivered the aligning barrier
// and is not to be read until the barrier is complete.
func (a *Inputs) Held(i int) bool { return a.in[i].held }

// Ended reports whether input i ended.
func (a *Inputs) Ended(i int) bool { return a.in[i].ended }

// Aligning is the epoch being aligned, 0 when none.
func (a *Inputs) Aligning() int64 { return a.epoch }

// Next is the input to read next when the merge follows arrival (the weak
// promise): the first input after the one Next last gave, round robin,
// that is neither held nor ended; false when every input ended. (Some live
// input is always readable: when all are held the barrier is complete.) A
// merge in an order fixed by the inputs reads the input whose turn it is
// instead, and needs each barrier at one position of that order, so that
// the input whose turn it is is never held.
func (a *Inputs) Next() (int, bool) {
	n := len(a.in)
	for k := range n {
		i := (a.turn + k) % n
		if in := &a.in[i]; !in.held && !in.ended {
			a.turn = (i + 1) % n
			return i, true
		}
	}
	return 0, false
}

// Output is the stage's watermark: the minimum of the watermarks of the
// inputs that are not ended, idle or behind, raised to it when that is
// above the last output (it never goes back), and whether there is one.
// There is none until each such input has a watermark; when no input
// counts (all ended or idle) it stays where it was. (Flink emits the
// largest watermark when every input ended; here the End marker does
// that job: it fires every window.)
func (a *Inputs) Output() (int64, bool) {
	m, any := int64(math.MaxInt64), false
	for i := range a.in {
		in := &a.in[i]
		if !in.counts {
			continue
		}
		if in.wm == NoTime {
			return a.out, a.out != NoTime
		}
		m, any = min(m, in.wm), true
	}
	if any && m > a.out {
		a.out = m
	}
	return a.out, a.out != NoTime
}

// InputWatermark is input i's watermark, NoTime before its first.
func (a *Inputs) InputWatermark(i int) int64 { return a.in[i].wm }

// SetWatermarks sets the inputs' watermarks from a checkpoint (or a
// channel's peer at a live change): wms[i] is input i's. The output
// watermark starts again from them.
func (a *Inputs) SetWatermarks(wms []int64) {
	for i := range a.in {
		a.in[i].wm = wms[i]
	}
	a.out = NoTime
}
