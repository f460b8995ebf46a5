package nexmark

import (
	"fmt"
	"slices"

	"streamd/core"
)

// topBidsSchema is the output of TopBids and of query 7.
var topBidsSchema = core.MustSchema(
	core.Field{Name: "window_start", Type: core.Timestamp},
	core.Field{Name: "window_end", Type: core.Timestamp},
	core.Field{Name: "auction", Type: core.Int64},
	core.Field{Name: "bidder", Type: core.Int64},
	core.Field{Name: "price", Type: core.Int64},
	core.Field{Name: "date_time", Type: core.Timestamp},
)

// TopBids keeps, per tumbling event-time window of size ns (aligned to the
// epoch), the bids with the highest price among those its instance sees,
// and emits them when the watermark passes the window's end - 1:
// window_start, window_end, auction, bidder, price, date_time, ordered by
// date_time, auction, bidder. In a region each channel keeps its own
// partial maxima (the state is per instance, not keyed: the operator does
// not support live rescaling); MaxPerWindow after the merger reduces them
// to the global maximum. Input: the fields auction, bidder, price (int64)
// and date_time (timestamp); records must carry event time.
func TopBids(name string, size int64, in *core.Schema) (core.OperatorDef, error) {
	var idx [4]int
	for k, f := range []string{"auction", "bidder", "price", "date_time"} {
		i, err := in.Lookup(f)
		if err != nil {
			return core.OperatorDef{}, fmt.Errorf("%s: %w", name, err)
		}
		idx[k] = i
	}
	if size <= 0 {
		return core.OperatorDef{}, fmt.Errorf("%s: window size must be positive", name)
	}
	return core.OperatorDef{
		Name:  name,
		Out:   topBidsSchema,
		Order: compareTopBids,
		New: func(env core.Env) (core.Operator, error) {
			return &topBids{name: name, size: size, idx: idx, env: env, wm: core.NoTime}, nil
		},
	}, nil
}

// compareTopBids orders TopBids output: window end, date_time, auction,
// bidder.
func compareTopBids(a, b []core.Value) int {
	for _, f := range [...]int{1, 5, 2, 3} {
		if c := core.Compare(core.Int64, a[f], b[f]); c != 0 {
			return c
		}
	}
	return 0
}

type topWindow struct {
	end  int64
	best int64
	bids [][4]core.Value // auction, bidder, price, date_time
}

type topBids struct {
	name string
	size int64
	idx  [4]int
	env  core.Env
	wm   int64
	wins []*topWindow // by end, ascending
	free []*topWindow
}

func (t *topBids) window(end int64) *topWindow {
	i := len(t.wins)
	for i > 0 && t.wins[i-1].end >= end {
		if t.wins[i-1].end == end {
			return t.wins[i-1]
		}
		i--
	}
	var w *topWindow
	if n := len(t.free); n > 0 {
		w, t.free = t.free[n-1], t.free[:n-1]
	} else {
		w = &topWindow{}
	}
	w.end, w.best, w.bids = end, -1<<63, w.bids[:0]
	t.wins = slices.Insert(t.wins, i, w)
	return w
}

func (t *topBids) Process(in *core.Batch, out *core.Emitter) error {
	var w *topWindow
	for i := 0; i < in.Len; i++ {
		ts := in.Time[i]
		if ts == core.NoTime {
			return fmt.Errorf("%s: record at %d has no event time", t.name, in.Pos[i])
		}
		end := floorDiv(ts, t.size)*t.size + t.size
		if end-1 <= t.wm {
			if err := t.env.Errors.LateRecord(t.name, in.Pos[i], in.Seq[i], "", false); err != nil {
				return err
			}
			continue
		}
		if w == nil || w.end != end {
			w = t.window(end)
		}
		row := in.Row(i)
		p := row[t.idx[2]].Int()
		if p < w.best {
			continue
		}
		if p > w.best {
			w.best, w.bids = p, w.bids[:0]
		}
		w.bids = append(w.bids, [4]core.Value{row[t.idx[0]], row[t.idx[1]], row[t.idx[2]], row[t.idx[3]]})
	}
	return nil
}

func (t *topBids) Watermark(wm int64, seq uint64, out *core.Emitter) error {
	if wm <= t.wm {
		return nil
	}
	t.wm = wm
	return t.fire(wm, seq, out)
}

func (t *topBids) Finish(seq uint64, out *core.Emitter) error {
	t.wm = core.MaxWatermark
	return t.fire(core.MaxWatermark, seq, out)
}

func (t *topBids) fire(wm int64, seq uint64, out *core.Emitter) error {
	for len(t.wins) > 0 && t.wins[0].end-1 <= wm {
		w := t.wins[0]
		t.wins = t.wins[1:]
		slices.SortFunc(w.bids, func(a, b [4]core.Value) int {
			for _, f := range [...]int{3, 0, 1} {
				if c := core.Compare(core.Int64, a[f], b[f]); c != 0 {
					return c
				}
			}
			return 0
		})
		for _, b := range w.bids {
			row := out.Append(seq, 0, w.end-1, 0)
			row[0], row[1] = core.TimeValue(w.end-t.size), core.TimeValue(w.end)
			row[2], row[3], row[4], row[5] = b[0], b[1], b[2], b[3]
		}
		t.free = append(t.free, w)
	}
	return out.Err()
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
