package nexmark

import (
	"cmp"
	"fmt"
	"slices"

	"streamd/core"
	"streamd/kvstate"
)

// sellersSchema is query 8's input to the region: persons and auctions
// reduced to the person id they concern (a person's id, an auction's
// seller) and the person's name ("" for an auction).
var sellersSchema = core.MustSchema(
	core.Field{Name: "kind", Type: core.Int64},
	core.Field{Name: "date_time", Type: core.Timestamp},
	core.Field{Name: "person", Type: core.Int64},
	core.Field{Name: "name", Type: core.String},
)

// newUsersSchema is the output of NewUsers and of query 8.
var newUsersSchema = core.MustSchema(
	core.Field{Name: "window_start", Type: core.Timestamp},
	core.Field{Name: "window_end", Type: core.Timestamp},
	core.Field{Name: "id", Type: core.Int64},
	core.Field{Name: "name", Type: core.String},
)

// Sellers maps events to sellersSchema: persons and auctions pass (bids are
// dropped) with person = id for a person, seller for an auction. It is
// query 8's pre-region step, so that the region can key on one field.
func Sellers(name string) core.OperatorDef {
	return core.OperatorDef{
		Name: name,
		Out:  sellersSchema,
		New:  func(core.Env) (core.Operator, error) { return sellers{}, nil },
	}
}

type sellers struct{ core.Base }

func (sellers) Process(in *core.Batch, out *core.Emitter) error {
	for i := 0; i < in.Len; i++ {
		row := in.Row(i)
		var p core.Value
		switch row[FKind].Int() {
		case Person:
			p = row[FID]
		case Auction:
			p = row[FSeller]
		default:
			continue
		}
		o := out.Append(in.Seq[i], in.Hash[i], in.Time[i], in.Pos[i])
		o[0], o[1], o[2], o[3] = row[FKind], row[FDateTime], p, row[FName]
	}
	return nil
}

// NewUsers is query 8's keyed windowed join (Nexmark "monitor new users"):
// per tumbling event-time window of size ns, the persons who registered in
// the window and opened at least one auction in the same window. Input:
// sellersSchema, partitioned by person. Output: window_start, window_end,
// id, name, one record per such person and window, emitted when the
// watermark passes end-1, in the order window end, then id (Order says so,
// so the merger interleaves channels deterministically).
//
// State is kept like core/window's: one kvstate.Map shared by the
// region's instances, keyed by person id inside the key group of the
// record's hash (each instance touches only its channel's groups), and a
// per-instance firing index (window end → keys), handed over with key
// groups on a live rescale (core.Migrator). Steady state allocates only
// for new keys' map entries.
func NewUsers(name string, size int64, groups int) (core.OperatorDef, error) {
	if size <= 0 {
		return core.OperatorDef{}, fmt.Errorf("%s: window size must be positive", name)
	}
	if groups == 0 {
		groups = kvstate.DefaultGroups
	}
	if err := kvstate.CheckGroups(groups); err != nil {
		return core.OperatorDef{}, fmt.Errorf("%s: %w", name, err)
	}
	state := kvstate.NewMap[int64, personState](groups)
	return core.OperatorDef{
		Name: name,
		Out:  newUsersSchema,
		Order: func(a, b []core.Value) int {
			if c := core.Compare(core.Int64, a[1], b[1]); c != 0 {
				return c
			}
			return core.Compare(core.Int64, a[2], b[2])
		},
		New: func(env core.Env) (core.Operator, error) {
			u := &newUsers{name: name, size: size, groups: groups, state: state, env: env,
				fire: kvstate.NewTimers(groups, func(r userRef) int { return int(r.g) }), wm: core.NoTime}
			if env.Rescaled {
				u.wm = env.Watermark
			}
			return u, nil
		},
	}, nil
}

// personState is one person id's open windows.
type personState struct {
	wins []personWindow // by end, ascending
}

type personWindow struct {
	end     int64
	name    string
	person  bool // registered in the window
	auction bool // opened an auction in the window
}

type userRef struct {
	g  int32
	id int64
}

type newUsers struct {
	name   string
	size   int64
	groups int
	state  *kvstate.Map[int64, personState]
	env    core.Env
	wm     int64
	fire   *kvstate.Timers[userRef] // window end → keys with that window open
	states []*personState
}

func (u *newUsers) Process(in *core.Batch, out *core.Emitter) error {
	for i := 0; i < in.Len; i++ {
		ts := in.Time[i]
		if ts == core.NoTime {
			return fmt.Errorf("%s: record at %d has no event time", u.name, in.Pos[i])
		}
		end := floorDiv(ts, u.size)*u.size + u.size
		if end-1 <= u.wm {
			if err := u.env.Errors.LateRecord(u.name, in.Pos[i], in.Seq[i], "", false); err != nil {
				return err
			}
			continue
		}
		row := in.Row(i)
		id := row[2].Int()
		g := kvstate.KeyGroup(in.Hash[i], u.groups)
		st := u.state.Get(g, id)
		if st == nil {
			if n := len(u.states); n > 0 {
				st, u.states = u.states[n-1], u.states[:n-1]
			} else {
				st = &personState{}
			}
			u.state.Put(g, id, st)
		}
		j := len(st.wins)
		for j > 0 && st.wins[j-1].end > end {
			j--
		}
		if j == 0 || st.wins[j-1].end != end {
			st.wins = slices.Insert(st.wins, j, personWindow{end: end})
			u.index(end, userRef{g: int32(g), id: id})
			j++
		}
		w := &st.wins[j-1]
		if row[0].Int() == Person {
			w.person, w.name = true, row[3].Str()
		} else {
			w.auction = true
		}
	}
	return nil
}

func (u *newUsers) index(end int64, r userRef) { u.fire.Add(end, r) }

func (u *newUsers) Watermark(wm int64, seq uint64, out *core.Emitter) error {
	if wm <= u.wm {
		return nil
	}
	u.wm = wm
	return u.fireUpTo(wm, seq, out)
}

func (u *newUsers) Finish(seq uint64, out *core.Emitter) error {
	u.wm = core.MaxWatermark
	return u.fireUpTo(core.MaxWatermark, seq, out)
}

// fireUpTo emits every window whose end-1 ≤ wm, by end, then id, and
// drops its state.
func (u *newUsers) fireUpTo(wm int64, seq uint64, out *core.Emitter) error {
	for {
		end, refs, ok := u.fire.NextFired(wm)
		if !ok {
			return nil
		}
		slices.SortFunc(refs, func(a, b userRef) int { return cmp.Compare(a.id, b.id) })
		for _, r := range refs {
			st := u.state.Get(int(r.g), r.id)
			// Windows fire in end order, so this key's first is this one.
			w := st.wins[0]
			if w.person && w.auction {
				row := out.Append(seq, 0, end-1, 0)
				row[0], row[1] = core.TimeValue(end-u.size), core.TimeValue(end)
				row[2], row[3] = core.IntValue(r.id), core.StringValue(w.name)
			}
			st.wins[0] = personWindow{}
			st.wins = slices.Delete(st.wins, 0, 1)
			if len(st.wins) == 0 {
				u.state.Delete(int(r.g), r.id)
				u.states = append(u.states, st)
			}
		}
		u.fire.Recycle(refs)
		if err := out.Err(); err != nil {
			return err
		}
	}
}

// ReleaseGroups implements core.Migrator: the firing-index entries of the
// keys in groups (their state stays in the shared kvstate map).
func (u *newUsers) ReleaseGroups(groups []int) any { return u.fire.Release(groups) }

// AdoptGroups implements core.Migrator.
func (u *newUsers) AdoptGroups(_ []int, h any) { u.fire.Adopt(h.(*kvstate.TimersHandoff[userRef])) }
