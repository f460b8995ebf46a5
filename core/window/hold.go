package window

import (
	"fmt"

	"streamd/core"
	"streamd/kvstate"
)

// Holding key groups in transit (core.Holder; docs/ARCHITECTURE.md,
// "Rebalancing at the same channel count"). A window emits only at
// watermarks and at the end, so its channel can keep processing while
// the state of key groups it gains is still being written by their old
// owner: Process decides a held group's record at once — no event time,
// late, partly late, a count_if predicate that fails: all judged by the
// record and the watermark alone, reported in record order as before — and
// keeps the record's state update (its row, hash and event time) in
// arrival order; a partial of the local step is judged and counted by its
// weight at once and its merge kept the same way. The AdoptGroups that ends the hold applies the kept
// updates, each key's in its records' order, so every key's accumulators
// get the same additions in the same order as without holding (float sums
// included) before anything can read them: a watermark that fires a
// window, a snapshot, a release, the end (the runtime waits for the
// handoff before those; Quiet tells it which watermarks may pass).

// The states of a key group in windowOp.pend.
const (
	heldWaiting uint8 = 1 + iota // held, its handoff not adopted
	heldIn                       // held, its handoff adopted: others' are out
)

// held is one kept record. The rows are flat in heldVals, in order, each
// of w.in's width, or of the local step's wide schema's for a partial.
type held struct {
	h    uint64 // the splitter's key hash
	t    int64  // event time, ns
	wide bool   // a partial of the local step (processWide)
}

// HoldGroups implements core.Holder. A window with allowed lateness
// (now, or a horizon behind the watermark left by an update that lowered
// it) refuses: a record of a held group that comes after its window fired
// would fire it again from state that is not here yet, and the row must
// come out at the record's place. Its channel waits for the handoff.
func (w *windowOp) HoldGroups(groups []int) bool {
	if w.lateness > 0 || w.late != w.wm {
		return false
	}
	if w.pend == nil {
		w.pend = make([]uint8, w.spec.Groups)
	}
	for _, g := range groups {
		if w.pend[g] == 0 {
			w.pend[g] = heldWaiting
			w.npend++
			w.nwait++
		}
	}
	return true
}

// Quiet implements core.Holder: wm fires no window and changes no
// record's lateness when no window end e has w.wm < e−1 ≤ wm. Window ends
// are pane boundaries, and the first boundary after w.wm+1 is the end of
// the pane holding w.wm+1.
func (w *windowOp) Quiet(wm int64) bool {
	if wm <= w.wm {
		return true
	}
	if w.wm == core.NoTime || wm == core.MaxWatermark {
		return false
	}
	_, next, _ := w.g.pane(w.wm + 1)
	return wm < next-1
}

// processHolding is Process while groups are held: records of the other
// groups are added (or, in a batch of the local step, merged) at once.
func (w *windowOp) processHolding(in *core.Batch, out *core.Emitter) error {
	wide := in.Schema == w.wide && w.wide != nil
	for i := 0; i < in.Len; i++ {
		row := in.Row(i)
		held := w.pend[kvstate.KeyGroup(in.Hash[i], w.spec.Groups)] != 0
		var err error
		switch {
		case !held && !wide:
			err = w.add(in, i, row, in.Schema, out)
		case !held:
			err = w.addWide(in, i, row, out)
		case !wide:
			err = w.hold(in, i, row, in.Schema)
		default:
			err = w.holdWide(in, i, row)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// holdWide judges record i of a wide batch (row) as addWide does and
// keeps its state update for later.
func (w *windowOp) holdWide(in *core.Batch, i int, row []core.Value) error {
	nw := w.in.Width()
	weight := row[nw].Int()
	if weight == 0 {
		return w.hold(in, i, row[:nw], w.in)
	}
	_, next, lastEnd := w.g.pane(in.Time[i])
	if lastEnd-1 <= w.wm {
		w.env.Errors.LateRecords(weight)
		return nil
	}
	if next-1 <= w.wm {
		w.env.Errors.PartlyLateRecords(weight)
	}
	w.heldVals = append(w.heldVals, row...)
	w.held = append(w.held, held{h: in.Hash[i], t: in.Time[i], wide: true})
	return nil
}

// hold judges record i of in (row, of schema s) as add does and keeps its
// state update for later.
func (w *windowOp) hold(in *core.Batch, i int, row []core.Value, s *core.Schema) error {
	t := in.Time[i]
	if t == core.NoTime {
		return w.env.Errors.BadSeq(w.spec.Name, in.Pos[i], seqOf(in, i), describe(s, row), fmt.Errorf("record has no event time"))
	}
	_, next, lastEnd := w.g.pane(t)
	if lastEnd-1 <= w.wm {
		return w.env.Errors.LateRecord(w.spec.Name, in.Pos[i], seqOf(in, i), describe(s, row), w.spec.LateToDeadLetter)
	}
	if next-1 <= w.wm {
		w.env.Errors.PartlyLateRecord()
	}
	// add reports addAll's first error after adding the record's other
	// aggregates; the kept update does the same adds later, so only the
	// report is due now. Only a count_if predicate can fail.
	if err := w.check(row); err != nil {
		if err := w.env.Errors.BadSeq(w.spec.Name, in.Pos[i], seqOf(in, i), describe(s, row), err); err != nil {
			return err
		}
	}
	w.heldVals = append(w.heldVals, row...)
	w.held = append(w.held, held{h: in.Hash[i], t: t})
	return nil
}

// check returns the first error addAll would return for row.
func (w *windowOp) check(row []core.Value) error {
	for a := range w.aggs {
		b := &w.aggs[a]
		if b.fn != CountIf || (b.nullable && row[b.field].IsNull()) {
			continue
		}
		if _, err := b.pred.EvalBool(row); err != nil {
			return err
		}
	}
	return nil
}

// unhold notes the handoff of groups; once every held group's has come,
// it ends the hold of all of them and applies the kept updates in arrival
// order. A group whose handoff came first stays held until then: its
// records after the handoff are kept behind its earlier ones, not added
// before them (handoff.Channel.Held; the order matters to a float sum).
func (w *windowOp) unhold(groups []int) {
	if w.npend == 0 {
		return
	}
	for _, g := range groups {
		if w.pend[g] == heldWaiting {
			w.pend[g] = heldIn
			w.nwait--
		}
	}
	if w.nwait > 0 {
		return
	}
	clear(w.pend)
	w.npend = 0
	if len(w.held) == 0 {
		return
	}
	off := 0
	for _, k := range w.held {
		width := w.in.Width()
		if k.wide {
			width = w.wide.Width()
		}
		row := w.heldVals[off : off+width]
		off += width
		start, _, _ := w.g.pane(k.t)
		if k.wide {
			_, accs := w.paneAccs(k.h, row, start)
			w.mergePartial(accs, row)
		} else {
			_, accs := w.paneAccs(k.h, row, start)
			addAll(w.aggs, accs, row) // its error was reported when held
		}
	}
	clear(w.heldVals) // no strings kept alive
	w.heldVals, w.held = w.heldVals[:0], w.held[:0]
}
