package nexmark

import (
	"fmt"

	"streamd/core"
)

// MaxPerWindow is a post-region operator over records ordered by window
// end (field end, a timestamp): per window it keeps the records whose int64
// field val is the largest, and emits them, in the order they arrived,
// once the window is complete: when a record of a later window arrives,
// when the watermark reaches end-1, or at end of stream. The input schema
// passes through unchanged.
//
// Ownership: Process reads the borrowed batch and copies the records it
// keeps; output records go through out.Append with the window's end-1 as
// event time.
func MaxPerWindow(name, end, val string, in *core.Schema) (core.OperatorDef, error) {
	ei, err := in.Lookup(end)
	if err != nil {
		return core.OperatorDef{}, fmt.Errorf("%s: %w", name, err)
	}
	vi, err := in.Lookup(val)
	if err != nil {
		return core.OperatorDef{}, fmt.Errorf("%s: %w", name, err)
	}
	if in.Fields[ei].Type != core.Timestamp || in.Fields[vi].Type != core.Int64 {
		return core.OperatorDef{}, fmt.Errorf("%s: %s must be a timestamp and %s an int64", name, end, val)
	}
	mk := func(core.Env) (core.Operator, error) {
		return &maxPerWindow{end: ei, val: vi, w: in.Width(), cur: core.NoTime}, nil
	}
	// The partial is the operator itself: the records with a channel's
	// largest val per window end include every record with the largest
	// val of all channels, and the merge keeps their (window end, key)
	// order. It flushes a window end at the watermark that fires it.
	return core.OperatorDef{Name: name, Out: in, New: mk, Partial: mk}, nil
}

type maxPerWindow struct {
	end, val, w int
	cur         int64        // the window end being collected (NoTime: none)
	best        int64        // its largest val
	rows        []core.Value // the records with val == best, w values each
	seq         uint64
}

func (m *maxPerWindow) Process(in *core.Batch, out *core.Emitter) error {
	for i := 0; i < in.Len; i++ {
		row := in.Row(i)
		e, v := row[m.end].Time(), row[m.val].Int()
		if e != m.cur {
			m.flush(out)
			m.cur, m.best = e, v
		}
		switch {
		case v > m.best:
			m.best = v
			m.rows = append(m.rows[:0], row...)
		case v == m.best:
			m.rows = append(m.rows, row...)
		}
		m.seq = in.Seq[i]
	}
	return out.Err()
}

func (m *maxPerWindow) flush(out *core.Emitter) {
	for i := 0; i < len(m.rows); i += m.w {
		copy(out.Append(m.seq, 0, m.cur-1, 0), m.rows[i:i+m.w])
	}
	clear(m.rows)
	m.rows = m.rows[:0]
	m.cur = core.NoTime
}

func (m *maxPerWindow) Watermark(wm int64, seq uint64, out *core.Emitter) error {
	if m.cur != core.NoTime && m.cur-1 <= wm {
		m.seq = seq
		m.flush(out)
	}
	return out.Err()
}

func (m *maxPerWindow) Finish(seq uint64, out *core.Emitter) error {
	if m.cur != core.NoTime {
		m.seq = seq
		m.flush(out)
	}
	return out.Err()
}
