package window

import (
	"fmt"
	"math/bits"

	"streamd/core"
)

// Local-global aggregation of a window (Flink's two-phase aggregation for
// hot keys): the local step runs before the splitter — in the single
// source stage or in every source worker — and folds the records of one
// batch per (key, pane) into partial accumulators; the window in the
// channel (the global step) merges a partial into its pane as it would
// have added the partial's records one by one.
//
// Why the output is byte-identical to the plain job:
//
//   - Only aggregates whose result does not depend on how the inputs are
//     grouped are folded: count, count_if, and sum, avg, min and max of
//     int64 (and min, max of timestamps). An int64 sum is exact in 128
//     bits (acc.addInt), and merge adds two such sums exactly. A float
//     sum, avg, min or max is never folded (floating-point addition is
//     not associative; a float min or max keeps a NaN met first): a
//     window with one refuses the local step (LocalRefusal).
//   - A partial holds records of one batch. Watermarks advance only
//     between batches, so the global step meets all of a partial's
//     records under one watermark; lateness is a function of the pane
//     and the watermark, so a partial's records are all late or none
//     (and all partly late or none). A late partial counts its records
//     late (ErrorPolicy.LateRecords). Late records sent to the dead-letter
//     file would need each record, so a window with late: dead_letter
//     refuses the local step.
//   - Records the window reports one by one pass raw: a record without an
//     event time, and a record a count_if condition fails on (the window
//     dead-letters it and adds it to its other aggregates, as before).
//   - Output order: a window emits by (window end, key) at the
//     watermark's sequence number, never in arrival order; fewer records
//     between two markers only shift sequence numbers that no output
//     carries.
//   - Nothing is held from one batch to the next, so a barrier, a live
//     channel change or a rebalance finds nothing in flight: checkpoints
//     and restores see the window state alone, which is the plain job's.

// LocalMode says whether a window runs a local step before the splitter.
type LocalMode uint8

const (
	// LocalOff: every record goes to its channel (the default).
	LocalOff LocalMode = iota
	// LocalOn: the local step folds every batch.
	LocalOn
	// LocalAuto: the local step folds while folding pays — while a batch's
	// partials are at most autoRatio of its records — and passes batches
	// unchanged otherwise, trying a fold again every autoProbe batches.
	LocalAuto
)

// String is the mode as the job file writes it.
func (m LocalMode) String() string {
	return [...]string{"off", "on", "auto"}[m]
}

const (
	// autoRatio: folding pays while a batch keeps at most 1/autoRatio of
	// its records as partials (a key in a pane repeating ≥ autoRatio
	// times on average, as hot keys do).
	autoRatio = 2
	// autoProbe is how many batches an auto local step passes unchanged
	// after a fold that did not pay before it folds again.
	autoProbe = 64
)

// LocalRefusal says why a window over aggs cannot fold before the
// splitter, or "" when it can: a float aggregate (sum, avg, min or max of
// a float64 field), late records sent to the dead-letter file, or an
// allowed lateness (a late firing per record).
func LocalRefusal(spec *Spec, in *core.Schema) string {
	if spec.AllowedLateness > 0 {
		return "allowed_lateness fires a window again for each record that arrives late, which a partial of folded records no longer holds"
	}
	if spec.LateToDeadLetter {
		return "late: dead_letter writes each late record, which a partial of folded records no longer holds"
	}
	for _, a := range spec.Aggs {
		if a.Func == Count || a.Func == CountIf {
			continue
		}
		if f, err := in.Lookup(a.Field); err == nil && in.Fields[f].Type == core.Float64 {
			return fmt.Sprintf("aggregate %q: %s of float field %q is not exact under another grouping of its additions", a.Name, a.Func, a.Field)
		}
	}
	return ""
}

// localSchema extends in with the fields a partial carries: its weight
// (the records folded; 0 for a record passed raw), then n, i and w of each
// aggregate's accumulator.
func localSchema(in *core.Schema, naggs int) (*core.Schema, error) {
	fields := append([]core.Field(nil), in.Fields...)
	fields = append(fields, core.Field{Name: "__local.weight", Type: core.Int64})
	for j := range naggs {
		for _, p := range []string{"n", "i", "w"} {
			fields = append(fields, core.Field{Name: fmt.Sprintf("__local.%d.%s", j, p), Type: core.Int64})
		}
	}
	return core.NewSchema(fields...)
}

// localSlot is one entry of the local step's per-batch table of partials:
// the key's hash, its pane, the partial's index, and the batch it belongs
// to (gen), so that a new batch needs no clearing.
type localSlot struct {
	h     uint64
	start int64
	p     int32
	gen   uint32
}

// partial is one (key, pane) of a batch: the row it was written to in the
// output batch and the records folded into it.
type partial struct {
	row    int32
	weight int64
}

// localOp is the local step: one instance per source stage or worker.
type localOp struct {
	mode  LocalMode
	g     grid // its own: the pane cache is per instance
	key   keyDef
	aggs  []bound
	preds bool // some aggregate is count_if
	in    *core.Schema
	wide  *core.Schema
	nw    int

	slots    []localSlot
	gen      uint32
	parts    []partial
	accs     []acc // len(aggs) per partial
	ok       []bool
	skip     int // auto: batches left to pass unchanged
	folded   int64
	received int64
}

// newLocal makes the local step's definition for a window over in, with
// aggregates aggs and key key, or nil when spec.Local is off.
func newLocal(spec *Spec, in *core.Schema, key keyDef, aggs []bound) (*core.OperatorDef, error) {
	if spec.Local == LocalOff {
		return nil, nil
	}
	if why := LocalRefusal(spec, in); why != "" {
		return nil, fmt.Errorf("%s: local_aggregation: %s", spec.Name, why)
	}
	wide, err := localSchema(in, len(aggs))
	if err != nil {
		return nil, fmt.Errorf("%s: local_aggregation: %w", spec.Name, err)
	}
	s := *spec
	return &core.OperatorDef{
		Name: spec.Name + " (local)",
		Out:  wide,
		New: func(core.Env) (core.Operator, error) {
			g, err := newGrid(&s)
			if err != nil {
				return nil, err
			}
			l := &localOp{mode: s.Local, g: g, key: key, aggs: aggs, in: in, wide: wide, nw: in.Width(), ok: make([]bool, len(aggs))}
			for _, a := range aggs {
				l.preds = l.preds || a.fn == CountIf
			}
			return l, nil
		},
	}, nil
}

// Process folds in into a batch of partials and raw records of the wide
// schema, emitted at once; in stays the caller's. An auto step that is
// passing batches emits in itself, unchanged.
func (l *localOp) Process(in *core.Batch, out *core.Emitter) error {
	if l.skip > 0 {
		l.skip--
		return out.Emit(in)
	}
	if n := 2 * in.Len; n > len(l.slots) {
		l.slots = make([]localSlot, 1<<bits.Len(uint(n)))
		l.gen = 0
	}
	l.gen++
	if l.gen == 0 { // wrapped: old entries could look current
		clear(l.slots)
		l.gen = 1
	}
	mask := uint64(len(l.slots) - 1)
	b := core.NewBatch(l.wide)
	b.Stamp = in.Stamp
	l.parts, l.accs = l.parts[:0], l.accs[:0]
	na := len(l.aggs)
	for i := 0; i < in.Len; i++ {
		t := in.Time[i]
		row := in.Row(i)
		if t == core.NoTime || l.preds && !l.conditions(row) {
			l.raw(b, in, i)
			continue
		}
		start, _, _ := l.g.pane(t)
		h := core.HashKey(row, l.key.idx, l.key.types)
		j := (h ^ uint64(start)*0x9e3779b97f4a7c15) & mask
		p := int32(-1)
		for {
			s := &l.slots[j]
			if s.gen != l.gen {
				p = int32(len(l.parts))
				*s = localSlot{h: h, start: start, p: p, gen: l.gen}
				r := b.Append(uint64(i+1), 0, t, in.Pos[i])
				copy(r, row)
				l.parts = append(l.parts, partial{row: int32(b.Len - 1)})
				for range na {
					l.accs = append(l.accs, acc{})
				}
				break
			}
			if s.h == h && s.start == start && l.sameKey(b.Row(int(l.parts[s.p].row)), row) {
				p = s.p
				break
			}
			j = (j + 1) & mask
		}
		l.parts[p].weight++
		accs := l.accs[int(p)*na : int(p+1)*na]
		if l.preds {
			l.fold(accs, row)
		} else {
			addAll(l.aggs, accs, row)
		}
	}
	for k, p := range l.parts {
		r := b.Row(int(p.row))
		r[l.nw] = core.IntValue(p.weight)
		for a := range na {
			ac := &l.accs[k*na+a]
			f := r[l.nw+1+3*a:]
			f[0], f[1], f[2] = core.IntValue(ac.n), core.IntValue(ac.i), core.IntValue(int64(ac.w))
		}
	}
	b.Folded = in.Len
	l.received += int64(in.Len)
	l.folded += int64(len(l.parts))
	if l.mode == LocalAuto && len(l.parts)*autoRatio > in.Len {
		l.skip = autoProbe
	}
	return out.Emit(b)
}

// conditions evaluates every count_if condition on row into l.ok; false
// if one fails (the record then goes raw, for the window to report).
func (l *localOp) conditions(row []core.Value) bool {
	for a := range l.aggs {
		if b := &l.aggs[a]; b.fn == CountIf {
			v, err := b.pred.EvalBool(row)
			if err != nil {
				return false
			}
			l.ok[a] = v
		}
	}
	return true
}

// fold adds row to accs as addAll does, with the count_if results
// conditions left in l.ok.
func (l *localOp) fold(accs []acc, row []core.Value) {
	for a := range l.aggs {
		b := &l.aggs[a]
		if b.fn == CountIf {
			if l.ok[a] {
				accs[a].i++
			}
			continue
		}
		_ = b.add(&accs[a], row) // only count_if's condition can fail
	}
}

// raw appends record i of in to b unfolded (weight 0).
func (l *localOp) raw(b *core.Batch, in *core.Batch, i int) {
	r := b.Append(uint64(i+1), 0, in.Time[i], in.Pos[i])
	copy(r, in.Row(i))
}

// sameKey says whether rows a and b (the same field layout) have the same
// key, as keyDef.equal decides for tuples.
func (l *localOp) sameKey(a, b []core.Value) bool {
	for _, i := range l.key.idx {
		if !a[i].Same(b[i]) {
			return false
		}
	}
	return true
}

func (l *localOp) Watermark(int64, uint64, *core.Emitter) error { return nil }
func (l *localOp) Finish(uint64, *core.Emitter) error           { return nil }

// processWide is the global step: it handles a batch of the local step's
// wide schema, adding raw records as Process does and merging partials
// into their panes.
func (w *windowOp) processWide(in *core.Batch, out *core.Emitter) error {
	nw := w.in.Width()
	for i := 0; i < in.Len; i++ {
		row := in.Row(i)
		weight := row[nw].Int()
		if weight == 0 {
			if err := w.add(in, i, row[:nw], w.in, out); err != nil {
				return err
			}
			continue
		}
		start, next, lastEnd := w.g.pane(in.Time[i])
		if lastEnd-1 <= w.late { // a window with a local step has no allowed lateness: late = wm
			w.env.Errors.LateRecords(weight)
			continue
		}
		if next-1 <= w.late {
			w.env.Errors.PartlyLateRecords(weight)
		}
		_, accs := w.paneAccs(in.Hash[i], row, start)
		for a := range w.aggs {
			f := row[nw+1+3*a:]
			src := acc{n: f[0].Int(), i: f[1].Int(), w: uint64(f[2].Int())}
			w.aggs[a].merge(&accs[a], &src)
		}
	}
	return nil
}

// addWide is processWide for one record (row), for a batch processed
// while key groups are held (hold.go); processWide keeps its loop inline,
// the global step's per-record path.
func (w *windowOp) addWide(in *core.Batch, i int, row []core.Value, out *core.Emitter) error {
	nw := w.in.Width()
	weight := row[nw].Int()
	if weight == 0 {
		return w.add(in, i, row[:nw], w.in, out)
	}
	start, next, lastEnd := w.g.pane(in.Time[i])
	if lastEnd-1 <= w.wm {
		w.env.Errors.LateRecords(weight)
		return nil
	}
	if next-1 <= w.wm {
		w.env.Errors.PartlyLateRecords(weight)
	}
	_, accs := w.paneAccs(in.Hash[i], row, start)
	w.mergePartial(accs, row)
	return nil
}

// mergePartial merges the partial in wide row into accs.
func (w *windowOp) mergePartial(accs []acc, row []core.Value) {
	nw := w.in.Width()
	for a := range w.aggs {
		f := row[nw+1+3*a:]
		src := acc{n: f[0].Int(), i: f[1].Int(), w: uint64(f[2].Int())}
		w.aggs[a].merge(&accs[a], &src)
	}
}
