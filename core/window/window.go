package window

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"streamd/core"
	"streamd/kvstate"
)

// Spec describes an event-time window aggregate.
type Spec struct {
	// Name is the operator's name in reports and errors.
	Name string
	// Key lists the grouping fields (1..MaxKeyFields); every field of the
	// region's key must be among them (see CheckPartitioning).
	Key []string
	// Size is the window length in ns; Slide the distance between window
	// starts in ns (Slide = Size, or 0, for tumbling windows; Size must be a
	// multiple of Slide for sliding ones). Windows are aligned to the epoch.
	// Both are ignored when Calendar is set.
	Size, Slide int64
	// Calendar, if set, cuts windows by the calendar of a time zone
	// (days, weeks, months, quarters, years) instead of by Size and Slide.
	Calendar *Calendar
	Aggs     []Agg
	// LateToDeadLetter sends late records to the dead-letter file; otherwise
	// they are dropped. Both are counted (ErrorPolicy.Late).
	LateToDeadLetter bool
	// AllowedLateness, ns ≥ 0, keeps a window's state after it fires until
	// the watermark reaches end − 1 + AllowedLateness (the window then
	// expires). A record that arrives after its window fired but before
	// it expired is added, and the window fires again at once: another
	// row for the same window and key, stamped with the record's sequence
	// number, holding every record so far (Flink's late firing). A record
	// whose windows have all expired is late (LateToDeadLetter). 0: a
	// window expires when it fires, and its state goes with it.
	AllowedLateness int64
	// Groups is the number of key groups (a power of two).
	Groups int
	// Local says whether the window runs a local step before the splitter
	// (local-global aggregation, local.go); not LocalOff only for a window
	// that LocalRefusal accepts.
	Local LocalMode
}

// keyState is one key's open panes. States are found by the key's hash
// (computed once by the splitter) and chained on the rare hash collision,
// so a lookup hashes 8 bytes, not the key tuple.
//
// A key's first pane, with up to inlineAccs accumulators, lives inside its
// keyState (256 bytes): with state far larger than the caches, finding and
// updating a key is one trip to memory for the state instead of three
// (state, pane array, accumulators). BenchmarkProcessLargeState measures it.
type keyState struct {
	key   tuple
	next  *keyState
	panes []pane // by start, ascending; inl[:] while one pane suffices
	inl   [1]pane
}

// inlineAccs is how many accumulators a pane holds in place; a window with
// more aggregates keeps them in ext.
const inlineAccs = 4

// pane aggregates a key's records of one slide-long slice of event time
// [start, start+slide): each record updates one pane, and a window of
// size/slide panes is the combination of its panes when it fires
// ("slicing": Carbone et al., "Cutty", CIKM 2016; Flink's sliding window
// panes).
type pane struct {
	start int64
	ext   []acc // the accumulators, when more than inlineAccs
	inl   [inlineAccs]acc
}

// accs returns p's accumulators, one per aggregate.
func (w *windowOp) accs(p *pane) []acc {
	if p.ext != nil {
		return p.ext
	}
	return p.inl[:len(w.aggs)]
}

// newPane returns an empty pane starting at start.
func (w *windowOp) newPane(start int64) pane {
	p := pane{start: start}
	if len(w.aggs) > inlineAccs {
		p.ext = w.newAccs()
	}
	return p
}

type ref struct {
	g  int32
	h  uint64
	st *keyState
}

// New binds a window aggregate to its input schema. Output schema:
// window_start, window_end (timestamps), the key fields, then one field per
// aggregate. Every instance shares one kvstate.Map; each touches only the
// key groups its channel owns.
func New(spec Spec, in *core.Schema) (core.OperatorDef, error) {
	cut := ""
	if spec.AllowedLateness < 0 {
		return core.OperatorDef{}, fmt.Errorf("%s: allowed lateness %d ns must not be negative", spec.Name, spec.AllowedLateness)
	}
	if c := spec.Calendar; c != nil {
		if err := c.Check(); err != nil {
			return core.OperatorDef{}, fmt.Errorf("%s: %w", spec.Name, err)
		}
		cut = c.String()
	} else {
		if spec.Size <= 0 {
			return core.OperatorDef{}, fmt.Errorf("%s: window size must be positive", spec.Name)
		}
		if spec.Slide == 0 {
			spec.Slide = spec.Size
		}
		if spec.Slide <= 0 || spec.Slide > spec.Size || spec.Size%spec.Slide != 0 {
			return core.OperatorDef{}, fmt.Errorf("%s: slide %d ns must be positive, at most the size %d ns, and divide it", spec.Name, spec.Slide, spec.Size)
		}
		cut = fmt.Sprintf("size=%dns slide=%dns", spec.Size, spec.Slide)
	}
	ka, err := bindKeyedAgg(spec.Name, spec.Groups, spec.Key, spec.Aggs, in,
		core.Field{Name: "window_start", Type: core.Timestamp}, core.Field{Name: "window_end", Type: core.Timestamp})
	if err != nil {
		return core.OperatorDef{}, err
	}
	spec.Groups = ka.groups
	key, aggs, out := ka.key, ka.aggs, ka.out
	local, err := newLocal(&spec, in, key, aggs)
	if err != nil {
		return core.OperatorDef{}, err
	}
	b := &built{in: in, key: key, aggs: aggs, out: out, local: local,
		state: kvstate.NewMap[uint64, keyState](spec.Groups),
		// The state description leaves the allowed lateness out: it does
		// not change what the state holds or how it is written, so an
		// update may change it (Retune) and a restore may run with another.
		desc: fmt.Sprintf("window %s %s", cut, ka.describe(spec.Aggs))}
	if local != nil {
		b.wide = local.Out
	}
	// The firing order: window end (field 1), then the key fields.
	b.orderBy = []core.OrderField{{Index: 1, Type: core.Timestamp}}
	for j, t := range key.types {
		b.orderBy = append(b.orderBy, core.OrderField{Index: 2 + j, Type: t, Nullable: key.nullable[j]})
	}
	orderBy := b.orderBy
	b.order = func(a, b []core.Value) int { return core.CompareBy(orderBy, a, b) }
	return b.def(spec), nil
}

// built is what a window's definitions share: the bound schema, key and
// aggregates, and the state store. An update of the allowed lateness
// (Retune) makes a definition of the same built with another Spec.
type built struct {
	in, out *core.Schema
	wide    *core.Schema // the local step's output, or nil
	key     keyDef
	aggs    []bound
	local   *core.OperatorDef
	state   *kvstate.Map[uint64, keyState]
	order   func(a, b []core.Value) int
	orderBy []core.OrderField
	desc    string
}

// settings are what an update may change in a running window
// (core.OperatorDef.Settings).
type settings struct {
	lateness int64 // ns
}

// def is the definition of spec over b.
func (b *built) def(spec Spec) core.OperatorDef {
	d := core.OperatorDef{
		Name:     spec.Name,
		Out:      b.out,
		Order:    b.order,
		OrderBy:  b.orderBy,
		State:    b.desc,
		Local:    b.local,
		Settings: &settings{lateness: spec.AllowedLateness},
		New: func(env core.Env) (core.Operator, error) {
			g, err := newGrid(&spec)
			if err != nil {
				return nil, err
			}
			w := &windowOp{spec: spec, in: b.in, wide: b.wide, g: g, key: b.key, aggs: b.aggs, out: b.out, nk: len(b.key.idx), state: b.state, env: env,
				fire:  kvstate.NewTimers(spec.Groups, func(r ref) int { return int(r.g) }),
				purge: kvstate.NewTimers(spec.Groups, func(r ref) int { return int(r.g) }),
				wm:    core.NoTime, tmp: core.OwnLines[acc](len(b.aggs)), sizes: newBlockSizes(spec.Groups),
				lateness: spec.AllowedLateness, retain: spec.AllowedLateness > 0}
			if env.Rescaled {
				w.wm = env.Watermark
			}
			w.late = expiry(w.wm, w.lateness)
			return w, nil
		},
	}
	d.Retune = func(next core.OperatorDef) (core.OperatorDef, error) {
		ns, ok := next.Settings.(*settings)
		switch {
		case !ok || next.State != b.desc:
			return core.OperatorDef{}, fmt.Errorf("window %s: the update changes its state layout (%s → %s)", spec.Name, b.desc, next.State)
		case b.local != nil && ns.lateness > 0:
			return core.OperatorDef{}, fmt.Errorf("window %s folds records before the splitter (local_aggregation), which allowed lateness cannot take: a late firing per record needs the records; run it with local_aggregation: off", spec.Name)
		}
		s := spec
		s.AllowedLateness = ns.lateness
		return b.def(s), nil
	}
	return d
}

// expiry is the expiry horizon at watermark wm with allowed lateness l:
// wm − l, saturated at the bottom of the range.
func expiry(wm, l int64) int64 {
	if wm < core.NoTime+l {
		return core.NoTime
	}
	return wm - l
}

type windowOp struct {
	spec  Spec
	in    *core.Schema // the input's
	wide  *core.Schema // the local step's output, or nil
	g     grid         // this instance's: it caches the last pane
	last  span         // the pane of add's last record (lo = hi = 0: none), checked before g.pane
	key   keyDef
	aggs  []bound
	out   *core.Schema
	nk    int
	state *kvstate.Map[uint64, keyState]
	env   core.Env
	// arrays are heap pane arrays keys gave back (giveBack): cleared,
	// length 0, at most maxArrays.
	arrays [][]pane
	slab   []keyState // new key states not handed out yet (insert)

	// fire indexes keys by the window ends they will fire at: the derived
	// data that lets a watermark find what to fire without scanning key
	// groups.
	fire *kvstate.Timers[ref]
	// purge indexes keys by the last window end of a pane kept after its
	// last window fired (retain): the pane goes once that window expires.
	purge *kvstate.Timers[ref]
	tmp   []acc
	wm    int64
	// lateness is the allowed lateness (ns). late is the expiry horizon: a
	// window ending at e has expired — it takes no more records, and its
	// state may be gone — iff e − 1 ≤ late. late = max over time of
	// wm − lateness: it never moves back, so a window that expired under
	// an earlier, smaller lateness stays expired after an update raises
	// it (its state was freed). With lateness 0, late = wm.
	lateness, late int64
	// retain: panes stay after their last window fires, until it expires
	// (purge). Set while the lateness is > 0 or once it has been; with it
	// off (lateness 0 from the start) a pane goes when its last window
	// fires, as before allowed lateness existed.
	retain bool
	free   [][]acc
	states []*keyState         // emptied key states, reused so steady state allocates nothing
	snap   *core.GroupSnapshot // a copy-on-write snapshot in flight, or nil
	sizes  *blockSizes         // what each key group took in the last snapshot (a buffer size hint)
	bufs   core.GroupBuffers   // the released snapshots' buffers, reused by the next
	sorted []sortItem          // sortByKey's buffers
	byKey  []ref

	// Key groups held while in transit (hold.go): pend[g] for a held
	// group (heldWaiting: its handoff not adopted yet; heldIn: adopted,
	// still held until every held group's is), npend of them, nwait
	// waiting; the kept records' rows (flat) and hashes and event times,
	// in arrival order.
	pend     []uint8
	npend    int
	nwait    int
	heldVals []core.Value
	held     []held
}

// sortItem is the index of a reference to fire, with its key's sort
// prefix.
type sortItem struct {
	hi, lo uint64
	i      int
}

// sortByKey sorts refs by key. Each key's prefix (keyDef.prefix) is read
// once, in order, and the sort moves 24-byte items holding the prefixes;
// only keys with equal prefixes are compared in full. Comparing the keys
// themselves would follow two pointers per comparison into state far
// larger than the caches (BenchmarkFireLargeState).
func (w *windowOp) sortByKey(refs []ref) {
	items := slices.Grow(w.sorted[:0], len(refs))
	for i := range refs {
		hi, lo := w.key.prefix(&refs[i].st.key)
		items = append(items, sortItem{hi: hi, lo: lo, i: i})
	}
	slices.SortFunc(items, func(a, b sortItem) int {
		if c := cmp.Compare(a.hi, b.hi); c != 0 {
			return c
		}
		if c := cmp.Compare(a.lo, b.lo); c != 0 {
			return c
		}
		return w.key.compare(&refs[a.i].st.key, &refs[b.i].st.key)
	})
	w.byKey = append(slices.Grow(w.byKey[:0], len(refs)), refs...)
	for k, it := range items {
		refs[k] = w.byKey[it.i]
	}
	clear(w.byKey) // no pointers kept into fired state
	w.sorted, w.byKey = items[:0], w.byKey[:0]
}

func (w *windowOp) newAccs() []acc {
	if n := len(w.free); n > 0 {
		a := w.free[n-1]
		w.free = w.free[:n-1]
		clear(a)
		return a
	}
	return make([]acc, len(w.aggs))
}

// Process adds in's records to their panes; a record that reaches windows
// which fired but have not expired (Spec.AllowedLateness) fires them again
// into out, at the record's sequence number. A batch of the local step's
// wide schema (window.Spec.Local) holds partials and raw records: it goes
// to processWide.
func (w *windowOp) Process(in *core.Batch, out *core.Emitter) error {
	if w.npend > 0 {
		return w.processHolding(in, out)
	}
	if in.Schema == w.wide && w.wide != nil {
		return w.processWide(in, out)
	}
	for i := 0; i < in.Len; i++ {
		if err := w.add(in, i, in.Row(i), in.Schema, out); err != nil {
			return err
		}
	}
	return nil
}

// add adds record i of in, whose fields are row (of schema s, for error
// messages and dead letters), to its pane, or reports it late or without
// an event time by the job's error policies. Windows of the pane that
// fired and have not expired fire again (late firings) into out.
func (w *windowOp) add(in *core.Batch, i int, row []core.Value, s *core.Schema, out *core.Emitter) error {
	t := in.Time[i]
	if t == core.NoTime {
		return w.env.Errors.BadSeq(w.spec.Name, in.Pos[i], seqOf(in, i), describe(s, row), fmt.Errorf("record has no event time"))
	}
	// The record's pane, and the last window containing it: mostly the
	// last record's.
	l := &w.last
	if t < l.lo || t >= l.hi { // lo = hi = 0 holds nothing
		l.lo, l.hi, l.end = w.g.pane(t)
	}
	start, next, lastEnd := l.lo, l.hi, l.end
	if lastEnd-1 <= w.late { // every window of the pane has expired
		if w.lateness > 0 {
			return w.env.Errors.ExpiredRecord(w.spec.Name, in.Pos[i], seqOf(in, i), describe(s, row), w.spec.LateToDeadLetter)
		}
		return w.env.Errors.LateRecord(w.spec.Name, in.Pos[i], seqOf(in, i), describe(s, row), w.spec.LateToDeadLetter)
	}
	if next-1 <= w.late { // its first windows have expired, not all
		w.env.Errors.PartlyLateRecord()
	}
	st, accs := w.paneAccs(in.Hash[i], row, start)
	if _, err := addAll(w.aggs, accs, row); err != nil {
		return w.env.Errors.BadSeq(w.spec.Name, in.Pos[i], seqOf(in, i), describe(s, row), err)
	}
	if next-1 <= w.wm { // its first windows have fired
		return w.fireLate(st, next, lastEnd, seqOf(in, i), out)
	}
	return nil
}

// fireLate fires again the windows of key st ending in [first, last] that
// have fired and not expired, by window end, at sequence number seq: a
// late firing, each row holding all of the window's records so far. A
// record that fires at least one window is counted (ErrorPolicy.LateFired).
func (w *windowOp) fireLate(st *keyState, first, last int64, seq uint64, out *core.Emitter) error {
	fired := false
	for e := first; e <= last && e-1 <= w.wm; e = w.g.next(e) {
		if e-1 <= w.late {
			continue
		}
		fired = true
		if err := w.emit(st, w.g.start(e), e, seq, out); err != nil {
			return err
		}
	}
	if fired {
		w.env.Errors.LateFiredRecord()
	}
	return out.Err()
}

// paneAccs returns the key state of the key in row (hash h from the
// splitter) and the accumulators of its pane starting at start, adding
// the key and the pane where missing.
func (w *windowOp) paneAccs(h uint64, row []core.Value, start int64) (*keyState, []acc) {
	g := kvstate.KeyGroup(h, w.spec.Groups)
	w.touch(g)
	k := w.key.of(row)
	st := w.lookup(g, h, &k)
	if st == nil {
		st = w.insert(g, h, &k)
	}
	pi, created := w.pane(st, start)
	if created {
		w.register(st, pi, ref{g: int32(g), h: h, st: st})
	}
	return st, w.accs(&st.panes[pi])
}

// pane returns st's pane starting at start, adding it in order if missing
// (created). Records mostly arrive in event-time order, so the search runs
// from the end.
func (w *windowOp) pane(st *keyState, start int64) (i int, created bool) {
	i = len(st.panes)
	for i > 0 && st.panes[i-1].start >= start {
		if st.panes[i-1].start == start {
			return i - 1, false
		}
		i--
	}
	if n := len(w.arrays); n > 0 && len(st.panes) == cap(st.panes) && cap(w.arrays[n-1]) > len(st.panes) {
		a := w.arrays[n-1][:len(st.panes)]
		w.arrays = w.arrays[:n-1]
		copy(a, st.panes)
		st.panes = a
	}
	if i == len(st.panes) { // the usual case: a pane after the others
		st.panes = append(st.panes, w.newPane(start))
	} else {
		st.panes = slices.Insert(st.panes, i, w.newPane(start))
	}
	return i, true
}

// register indexes the key at every window end of a new pane that no other
// pane of the key already registered and that has not fired. A pane
// starting at s belongs to the windows ending in [next(s), lastEnd(s)]
// ([s+slide, s+size] for fixed windows); the panes before and after it
// (sorted) cover contiguous ends next to it.
func (w *windowOp) register(st *keyState, i int, r ref) {
	g := &w.g
	p := &st.panes[i]
	lo, hi := g.next(p.start), g.lastEnd(p.start)
	if i > 0 {
		lo = max(lo, g.next(g.lastEnd(st.panes[i-1].start)))
	}
	if i+1 < len(st.panes) {
		hi = min(hi, st.panes[i+1].start)
	}
	for e := lo; e <= hi; e = g.next(e) {
		if e-1 > w.wm {
			w.index(e, r)
		}
	}
	if end := g.lastEnd(p.start); w.retain && end-1 <= w.wm {
		w.purge.Add(end, r) // created after its last window fired
	}
}

func (w *windowOp) lookup(g int, h uint64, k *tuple) *keyState {
	st := w.state.Get(g, h)
	for st != nil && !w.key.equal(&st.key, k) {
		st = st.next
	}
	return st
}

// stateSlab is how many key states are allocated at once: one allocation
// for many new keys (a key state removed goes to w.states for reuse, so a
// slab is never half wasted for long).
const stateSlab = 128

// insert adds an empty state for key k (not present) with hash h.
func (w *windowOp) insert(g int, h uint64, k *tuple) *keyState {
	var st *keyState
	if n := len(w.states); n > 0 {
		st = w.states[n-1]
		w.states = w.states[:n-1]
	} else {
		if len(w.slab) == 0 {
			w.slab = make([]keyState, stateSlab)
		}
		st, w.slab = &w.slab[0], w.slab[1:]
	}
	st.panes = st.inl[:0]
	st.key = *k
	st.next = w.state.Get(g, h)
	w.state.Put(g, h, st)
	return st
}

// remove unlinks st (hash h) and keeps it for reuse.
func (w *windowOp) remove(g int, h uint64, st *keyState) {
	head := w.state.Get(g, h)
	switch {
	case head == st && st.next == nil:
		w.state.Delete(g, h)
	case head == st:
		w.state.Put(g, h, st.next)
	default:
		for p := head; p != nil; p = p.next {
			if p.next == st {
				p.next = st.next
				break
			}
		}
	}
	st.next, st.key = nil, tuple{}
	w.states = append(w.states, st)
}

func (w *windowOp) index(end int64, r ref) { w.fire.Add(end, r) }

func (w *windowOp) Watermark(wm int64, seq uint64, out *core.Emitter) error {
	if wm <= w.wm {
		return nil
	}
	if w.npend > 0 && !w.Quiet(wm) {
		panic("window: a watermark that fires while key groups are held (core.Holder)")
	}
	w.wm = wm
	w.late = max(w.late, expiry(wm, w.lateness))
	if err := w.fireUpTo(wm, seq, out); err != nil {
		return err
	}
	w.purgeUpTo(w.late)
	return nil
}

func (w *windowOp) Finish(seq uint64, out *core.Emitter) error {
	if w.npend > 0 {
		panic("window: Finish while key groups are held (core.Holder)")
	}
	w.wm, w.late = core.MaxWatermark, core.MaxWatermark
	return w.fireUpTo(core.MaxWatermark, seq, out)
}

// fireUpTo emits every window whose end-1 ≤ wm, by window end, then key.
// A pane whose last window fires goes with it, or, with retain, is indexed
// to go when that window expires (purgeUpTo).
func (w *windowOp) fireUpTo(wm int64, seq uint64, out *core.Emitter) error {
	for {
		end, refs, ok := w.fire.NextFired(wm)
		if !ok {
			return nil
		}
		w.sortByKey(refs)
		start := w.g.start(end)
		for _, r := range refs {
			w.touch(int(r.g))
			st := r.st
			if err := w.emit(st, start, end, seq, out); err != nil {
				return err
			}
			drop := 0
			for j := range st.panes {
				p := &st.panes[j]
				if p.start >= end || w.g.lastEnd(p.start) > end {
					break
				}
				drop = j + 1 // this window is the pane's last
			}
			switch {
			case drop == 0:
			case w.retain:
				if w.g.lastEnd(st.panes[drop-1].start) == end {
					w.purge.Add(end, r)
				}
			default:
				w.dropPanes(r, drop)
			}
		}
		w.fire.Recycle(refs)
		if err := out.Err(); err != nil {
			return err
		}
	}
}

// emit appends the row of key st's window [start, end) to out at sequence
// number seq, from the panes it holds; a result that does not fit the
// output goes through the error policy instead (overflowed).
func (w *windowOp) emit(st *keyState, start, end int64, seq uint64, out *core.Emitter) error {
	clear(w.tmp)
	for j := range st.panes {
		p := &st.panes[j]
		if p.start >= end {
			break
		}
		if p.start < start {
			continue
		}
		accs := w.accs(p)
		for a := range w.aggs {
			w.aggs[a].merge(&w.tmp[a], &accs[a])
		}
	}
	if err := overflow(w.aggs, w.tmp); err != nil {
		return w.overflowed(start, end, st, err)
	}
	row := out.Append(seq, 0, end-1, 0)
	row[0] = core.TimeValue(start)
	row[1] = core.TimeValue(end)
	copy(row[2:], st.key[:w.nk])
	for a := range w.aggs {
		row[2+w.nk+a] = w.aggs[a].result(&w.tmp[a])
	}
	return nil
}

// dropPanes removes the first n panes of r's key (their windows have all
// fired, and with retain expired), and the key when none is left.
func (w *windowOp) dropPanes(r ref, n int) {
	st := r.st
	for j := range n {
		if ext := st.panes[j].ext; ext != nil {
			w.free = append(w.free, ext)
		}
	}
	st.panes = slices.Delete(st.panes, 0, n)
	switch {
	case len(st.panes) == 0:
		w.giveBack(st.panes)
		w.remove(int(r.g), r.h, st)
	case len(st.panes) == 1 && &st.panes[0] != &st.inl[0]:
		st.inl[0] = st.panes[0] // back in place
		w.giveBack(st.panes)
		st.panes = st.inl[:1]
	}
}

// maxArrays bounds the pane arrays a window operator keeps for reuse.
const maxArrays = 1 << 16

// giveBack keeps a key's heap pane array (not a keyState's inl) for the
// next key that outgrows its panes: a key whose next window's records
// arrive before its last window fires (every key of an in-order stream,
// once per window) holds two panes for a moment, and takes an array given
// back instead of a new one. The caller then points the key's panes
// elsewhere (inl, or the key is removed).
func (w *windowOp) giveBack(panes []pane) {
	if cap(panes) <= 1 || len(w.arrays) >= maxArrays {
		return
	}
	a := panes[:cap(panes)]
	clear(a) // no stale accumulators (ext) kept alive
	w.arrays = append(w.arrays, a[:0])
}

// purgeUpTo frees the retained panes whose last window has expired at
// horizon late (a window ending at e expires when e − 1 ≤ late). Each
// retained pane is indexed once, at its last window end, so a key is
// removed only by the index entry of its last pane: no entry is left
// pointing at a removed (and reused) key state.
func (w *windowOp) purgeUpTo(late int64) {
	for {
		end, refs, ok := w.purge.NextFired(late)
		if !ok {
			return
		}
		for _, r := range refs {
			w.touch(int(r.g))
			st := r.st
			n := 0
			for n < len(st.panes) && w.g.lastEnd(st.panes[n].start) <= end {
				n++
			}
			if n > 0 {
				w.dropPanes(r, n)
			}
		}
		w.purge.Recycle(refs)
	}
}

// overflowed reports, by the job's on_error policy, the window [start,
// end) of key st whose result does not fit the output (err says why): the
// row is not emitted. The dead letter is the row, the sum written exactly,
// with no input position (a window has none).
func (w *windowOp) overflowed(start, end int64, st *keyState, err error) error {
	prefix := append([]core.Value{core.TimeValue(start), core.TimeValue(end)}, st.key[:w.nk]...)
	return w.env.Errors.Bad(w.spec.Name, 0, describeRow(w.out, prefix, w.aggs, w.tmp), err)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// describe renders a record for error messages and dead letters.
func describe(s *core.Schema, row []core.Value) string {
	var sb strings.Builder
	var buf []byte
	for i, f := range s.Fields {
		if i > 0 {
			sb.WriteByte(',')
		}
		buf = core.AppendText(buf[:0], f.Type, row[i])
		sb.Write(buf)
	}
	return sb.String()
}

// GroupBytes implements core.StateSizer: the keys of group g times one
// key's state block and its map slot (a key's out-of-place panes and
// string bytes are not counted: an estimate).
func (w *windowOp) GroupBytes(g int) int64 {
	if w.npend > 0 && w.pend[g] != 0 {
		return 0 // its old owner may still be writing it
	}
	return int64(w.state.Len(g)) * int64(unsafe.Sizeof(keyState{})+16)
}

// handoff is what a window instance hands over with key groups: their
// firing and purge index entries, and its expiry horizon and retain.
type handoff struct {
	fire, purge *kvstate.TimersHandoff[ref]
	late        int64
	retain      bool
}

// ReleaseGroups implements core.Migrator: it removes the keys of groups
// from this instance's firing and purge indexes and returns them (their
// state stays in the shared kvstate map), with the expiry horizon: a
// channel added after an update raised the lateness learns from it which
// windows had expired before.
func (w *windowOp) ReleaseGroups(groups []int) any {
	if w.npend > 0 {
		panic("window: ReleaseGroups while key groups are held (core.Holder)")
	}
	if w.snap != nil {
		w.snap.TouchGroups(groups) // the new owner will change them
	}
	return &handoff{fire: w.fire.Release(groups), purge: w.purge.Release(groups), late: w.late, retain: w.retain}
}

// AdoptGroups implements core.Migrator: it adds another instance's released
// keys to this instance's firing and purge indexes and, for held groups
// (core.Holder), ends their hold: once none is held, the records kept
// meanwhile are applied, in arrival order, before it returns.
func (w *windowOp) AdoptGroups(groups []int, h any) {
	ho := h.(*handoff)
	w.fire.Adopt(ho.fire)
	w.purge.Adopt(ho.purge)
	w.late = max(w.late, ho.late)
	w.retain = w.retain || ho.retain
	w.unhold(groups)
}

// seqOf is record i's sequence number (0 where the batch has none: one
// not routed by a splitter).
func seqOf(b *core.Batch, i int) uint64 {
	if i < len(b.Seq) {
		return b.Seq[i]
	}
	return 0
}

// Retune implements core.Retuner: the window takes def's allowed lateness
// (a definition of its own built by OperatorDef.Retune) at the update's
// sync point. The expiry horizon never moves back: windows that expired
// under the old lateness stay expired when it grows (their state may be
// gone), and windows that expire under a smaller one take no more records
// from here on; their state goes at the next watermark.
func (w *windowOp) Retune(def core.OperatorDef) error {
	s, ok := def.Settings.(*settings)
	if !ok {
		return fmt.Errorf("window %s: an update of another kind of operator", w.spec.Name)
	}
	w.lateness = s.lateness
	w.spec.AllowedLateness = s.lateness
	w.late = max(w.late, expiry(w.wm, w.lateness))
	w.retain = w.retain || s.lateness > 0
	return nil
}
