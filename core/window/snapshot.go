package window

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"

	"streamd/core"
)

// Snapshot format of a window instance's key groups (all integers are
// varints unless noted):
//
//	groups
//	  group, keys (4 bytes LE)
//	    hash (8 bytes LE), key values (per key type), panes
//	      start, one (n, i, w as 8 bytes LE) per aggregate
//
// n, i and w are an accumulator's fields (see acc): w is a float
// aggregate's bits, or the high word of an int64 sum. The high word was
// added (sums kept in 128 bits) without changing the format: before it, w
// held the float 0.0 for an int64 sum, which reads as a high word of 0, so
// checkpoints from before restore to the same sums (a sum that had wrapped
// then restores as the wrapped value it was).
//
// The key count is fixed-width so that a group is written in one pass
// over its keys (the count is filled in after them).
//
// A window that keeps panes after they fire (Spec.AllowedLateness, now or
// before an update) adds one block after the groups, numbered with the
// group count (one past the last group): its expiry horizon (windowOp.late
// at the barrier), a varint. A restore takes the largest horizon of the
// files it reads, so windows that had expired, and whose state is gone,
// stay expired under any lateness. A checkpoint without the block was
// taken with lateness 0 throughout: its horizon is its watermark. Windows
// that never had an allowed lateness write no such block, so their
// checkpoints keep their format.
// A key value is a varint for int64, timestamp and bool, 8 bytes LE for a
// float64, and a length-prefixed string; a Nullable key field's value is
// preceded by one byte, 1 for null (and nothing follows) or 0. Keys of
// fields that are not Nullable have no such byte, so checkpoints of jobs
// without nullable keys keep their format (and the state description
// names nullable key fields, so neither kind restores into the other).

var errShort = errors.New("window snapshot: truncated")

// SnapshotGroups implements core.Snapshotter.
func (w *windowOp) SnapshotGroups(dst []byte, groups []int) ([]byte, error) {
	n := len(groups)
	if w.retain {
		n++
	}
	dst = binary.AppendUvarint(dst, uint64(n))
	for _, g := range groups {
		dst = w.writeGroup(dst, g)
	}
	if w.retain {
		dst = appendHorizon(dst, w.spec.Groups, w.late)
	}
	return dst, nil
}

// BeginSnapshot implements core.AsyncSnapshotter: copy-on-write, the
// instance touches a group before changing it.
func (w *windowOp) BeginSnapshot(groups []int) *core.GroupSnapshot {
	if w.snap != nil {
		w.snap.TouchAll() // the previous one must not read what this one's owner changes
	}
	write := w.writeGroup
	if w.retain {
		horizon, top := w.late, w.spec.Groups // as at the barrier
		groups = append(slices.Clip(groups), top)
		write = func(dst []byte, g int) []byte {
			if g == top {
				return appendHorizon(dst, top, horizon)
			}
			return w.writeGroup(dst, g)
		}
	}
	w.snap = core.NewGroupSnapshotBuffers(groups, &w.bufs, write)
	return w.snap
}

// appendHorizon appends the block holding the expiry horizon, numbered
// groups (see the format above).
func appendHorizon(dst []byte, groups int, late int64) []byte {
	dst = binary.AppendUvarint(dst, uint64(groups))
	return binary.AppendVarint(dst, late)
}

// touch finishes group g's part of a snapshot in flight before g changes.
func (w *windowOp) touch(g int) {
	if w.snap != nil {
		if w.snap.Finished() {
			w.snap = nil
			return
		}
		w.snap.Touch(g)
	}
}

// writeGroup appends one group: its number, key count, keys. Called with
// an empty dst (copy-on-write: a block of its own), it first makes sure
// the buffer holds what the group is expected to take (beginGroup).
func (w *windowOp) writeGroup(dst []byte, g int) []byte {
	dst, start, at := beginGroup(dst, w.sizes, g, w.state.Len(g))
	n := uint32(0)
	var chunk [prefetchChunk]*keyState
	var hs [prefetchChunk]uint64
	k := 0
	flush := func() {
		warm(chunk[:k])
		for j := range k {
			st := chunk[j]
			dst = binary.LittleEndian.AppendUint64(dst, hs[j])
			dst = w.key.appendKey(dst, &st.key)
			dst = binary.AppendUvarint(dst, uint64(len(st.panes)))
			for i := range st.panes {
				dst = binary.AppendVarint(dst, st.panes[i].start)
				dst = appendAccs(dst, w.accs(&st.panes[i]))
			}
		}
		k = 0
	}
	w.state.Range(g, func(h uint64, st *keyState) bool {
		for ; st != nil; st = st.next {
			n++
			chunk[k], hs[k] = st, h
			if k++; k == prefetchChunk {
				flush()
			}
		}
		return true
	})
	flush()
	return endGroup(dst, w.sizes, g, start, at, n)
}

// prefetchChunk is how many keys writeGroup loads ahead of serialising
// them (see warm).
const prefetchChunk = 16

// noWarm turns warm off (the baseline of BenchmarkSnapshotGroups).
var noWarm bool

// warmSink keeps warm's loads from being optimised away.
var warmSink atomic.Uintptr

// warm loads the memory serialising sts will read — each key state (its
// four cache lines: key, pane slice, the pane in place, its accumulators),
// then its first key field's string and any pane kept out of place — one
// level at a time across all of sts, so that the cache misses of different
// keys overlap instead of following each other (group prefetching: Chen,
// Ailamaki, Gibbons, Mowry, "Improving hash join performance through
// prefetching", ICDE 2004, §4). State is reached through pointers in
// allocation order, not key order, so without it each key costs two or
// more dependent trips to memory.
func warm(sts []*keyState) {
	if noWarm {
		return
	}
	var x uintptr
	var panes [prefetchChunk][]pane
	var strs [prefetchChunk]string
	for i, st := range sts {
		panes[i], strs[i] = st.panes, st.key[0].Str()
		x += uintptr(st.inl[0].start) + uintptr(st.inl[0].inl[inlineAccs-1].n)
	}
	for i := range sts {
		if len(strs[i]) > 0 {
			x += uintptr(strs[i][0])
		}
		if p := panes[i]; len(p) > 0 {
			x += uintptr(p[0].start)
			if p[0].ext != nil {
				x += uintptr(p[0].ext[0].n)
			}
		}
	}
	warmSink.Store(x)
}

// warmRunning is warm for running aggregates: each state's lines (key,
// accumulators in place), then its first key field's string and any
// accumulators out of place.
func warmRunning(sts []*running) {
	if noWarm {
		return
	}
	var x uintptr
	var strs [prefetchChunk]string
	var ext [prefetchChunk][]acc
	for i, st := range sts {
		strs[i], ext[i] = st.key[0].Str(), st.ext
		x += uintptr(st.inl[inlineAccs-1].n)
	}
	for i := range sts {
		if len(strs[i]) > 0 {
			x += uintptr(strs[i][0])
		}
		if len(ext[i]) > 0 {
			x += uintptr(ext[i][0].n)
		}
	}
	warmSink.Store(x)
}

// blockSizes is what an instance's last snapshot wrote of each key group
// (written by whichever goroutine serialised the group then): its block's
// bytes and key count, from which beginGroup sizes the group's next
// buffer; and perKey, the bytes per key of the group written last (any
// group's), for groups never written with keys.
type blockSizes struct {
	bytes, keys []int32
	perKey      atomic.Int32
}

func newBlockSizes(groups int) *blockSizes {
	return &blockSizes{bytes: make([]int32, groups), keys: make([]int32, groups)}
}

// need is the capacity a block of group g holding keys keys is given: the
// bytes per key the group took last time (or perKey) times keys, plus the
// block's head, plus an eighth, so that the buffer rarely grows by
// copying. 0: no estimate (no snapshot has written a key yet).
func (s *blockSizes) need(g, keys int) int {
	per := int(s.perKey.Load())
	if k := int(s.keys[g]); k > 0 {
		per = (int(s.bytes[g]) + k - 1) / k
	}
	if per == 0 {
		return 0
	}
	n := min(per*keys, 1<<30) + 16
	return n + n/8
}

// beginGroup starts group g's block, keys keys long (the state map's
// count: a hint): a dst of length 0 (a block of its own, copy-on-write)
// without the capacity sizes estimates is replaced by a new buffer of that
// capacity; then the group's number and a placeholder for its key count.
// start and at are where the block and the count begin.
func beginGroup(dst []byte, sizes *blockSizes, g, keys int) (out []byte, start, at int) {
	if len(dst) == 0 {
		if need := sizes.need(g, keys); cap(dst) < need {
			dst = make([]byte, 0, need)
		}
	}
	start = len(dst)
	dst = binary.AppendUvarint(dst, uint64(g))
	return append(dst, 0, 0, 0, 0), start, len(dst)
}

// endGroup fills in the key count n of the block begun at start and
// records its size for the next snapshot.
func endGroup(dst []byte, sizes *blockSizes, g, start, at int, n uint32) []byte {
	binary.LittleEndian.PutUint32(dst[at:], n)
	size := int32(min(len(dst)-start, 1<<30))
	sizes.bytes[g], sizes.keys[g] = size, int32(min(n, 1<<30))
	if n > 0 {
		sizes.perKey.Store(int32((int64(size) + int64(n) - 1) / int64(n)))
	}
	return dst
}

func appendAccs(dst []byte, accs []acc) []byte {
	for _, a := range accs {
		dst = binary.AppendVarint(dst, a.n)
		dst = binary.AppendVarint(dst, a.i)
		dst = binary.LittleEndian.AppendUint64(dst, a.w)
	}
	return dst
}

// RestoreGroups implements core.Snapshotter: it adds the keys' states to
// the shared map and registers their window ends in this instance's firing
// index, pane by pane in start order, as Process would have.
func (w *windowOp) RestoreGroups(data []byte, keep func(group int) bool) error {
	d := decoder{b: data}
	ng := d.uvarint()
	horizon := false
	for range ng {
		g := int(d.uvarint())
		if d.err == nil && g == w.spec.Groups && !horizon {
			w.late = max(w.late, d.varint())
			w.retain, horizon = true, true
			continue
		}
		if d.err == nil && (g < 0 || g >= w.spec.Groups) {
			return fmt.Errorf("window snapshot: key group %d of %d", g, w.spec.Groups)
		}
		nk := d.u32()
		mine := keep == nil || keep(g)
		for range nk {
			h := d.u64()
			k := w.key.readKey(&d)
			np := d.uvarint()
			if d.err != nil {
				return d.err
			}
			if !mine {
				for range np {
					d.varint()
					for range w.aggs {
						d.varint()
						d.varint()
						d.u64()
					}
				}
				continue
			}
			if w.lookup(g, h, &k) != nil {
				return fmt.Errorf("window snapshot: key %v restored twice", k[:w.nk])
			}
			st := w.insert(g, h, &k)
			r := ref{g: int32(g), h: h, st: st}
			for range np {
				p := w.newPane(d.varint())
				accs := w.accs(&p)
				for a := range accs {
					accs[a] = acc{n: d.varint(), i: d.varint(), w: d.u64()}
				}
				if d.err != nil {
					return d.err
				}
				if n := len(st.panes); n > 0 && st.panes[n-1].start >= p.start {
					return fmt.Errorf("window snapshot: panes out of order")
				}
				if w.g.lastEnd(p.start)-1 <= w.wm {
					w.retain = true // kept after its windows fired: purged when they expire
				}
				st.panes = append(st.panes, p)
				w.register(st, len(st.panes)-1, r)
			}
		}
	}
	if d.err == nil && len(d.b) != 0 {
		return fmt.Errorf("window snapshot: %d bytes left over", len(d.b))
	}
	if !horizon {
		w.late = max(w.late, w.wm) // taken with lateness 0: expired = fired
	}
	return d.err
}

func (k *keyDef) appendKey(dst []byte, t *tuple) []byte {
	for j, typ := range k.types {
		v := t[j]
		if k.nullable[j] {
			if v.IsNull() {
				dst = append(dst, 1)
				continue
			}
			dst = append(dst, 0)
		}
		switch typ {
		case core.String:
			dst = binary.AppendUvarint(dst, uint64(len(v.Str())))
			dst = append(dst, v.Str()...)
		case core.Float64:
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v.Float()))
		default:
			dst = binary.AppendVarint(dst, v.Int())
		}
	}
	return dst
}

func (k *keyDef) readKey(d *decoder) (t tuple) {
	for j, typ := range k.types {
		if k.nullable[j] && d.u8() == 1 {
			t[j] = core.Null()
			continue
		}
		switch typ {
		case core.String:
			t[j] = core.StringValue(d.str())
		case core.Float64:
			t[j] = core.FloatValue(math.Float64frombits(d.u64()))
		case core.Bool:
			t[j] = core.BoolValue(d.varint() != 0)
		default:
			t[j] = core.IntValue(d.varint())
		}
	}
	return t
}

// decoder reads the snapshot format; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) u8() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.err = errShort
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) u32() uint32 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 4 {
		d.err = errShort
		return 0
	}
	v := binary.LittleEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *decoder) u64() uint64 {
	if d.err != nil || len(d.b) < 8 {
		d.err = errShort
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) str() string {
	n := d.uvarint()
	if d.err != nil || uint64(len(d.b)) < n {
		d.err = errShort
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

var _ core.AsyncSnapshotter = (*windowOp)(nil)

// SnapshotGroups implements core.Snapshotter for the running aggregate:
// groups, then per group its number, key count (4 bytes LE) and keys
// (hash, key values, accumulators).
func (r *runningOp) SnapshotGroups(dst []byte, groups []int) ([]byte, error) {
	dst = binary.AppendUvarint(dst, uint64(len(groups)))
	for _, g := range groups {
		dst = r.writeGroup(dst, g)
	}
	return dst, nil
}

// BeginSnapshot implements core.AsyncSnapshotter.
func (r *runningOp) BeginSnapshot(groups []int) *core.GroupSnapshot {
	if r.snap != nil {
		r.snap.TouchAll()
	}
	r.snap = core.NewGroupSnapshotBuffers(groups, &r.bufs, r.writeGroup)
	return r.snap
}

// writeGroup is windowOp.writeGroup for running aggregates. The chunked
// loop is written out in both rather than shared through a generic helper
// with the per-key write as a function value: that indirect call per key
// measured 8 % slower (BenchmarkSnapshotGroups, four pairs).
func (r *runningOp) writeGroup(dst []byte, g int) []byte {
	dst, start, at := beginGroup(dst, r.sizes, g, r.state.Len(g))
	n := uint32(0)
	var chunk [prefetchChunk]*running
	var hs [prefetchChunk]uint64
	k := 0
	flush := func() {
		warmRunning(chunk[:k])
		for j := range k {
			dst = binary.LittleEndian.AppendUint64(dst, hs[j])
			dst = r.key.appendKey(dst, &chunk[j].key)
			dst = appendAccs(dst, r.accs(chunk[j]))
		}
		k = 0
	}
	r.state.Range(g, func(h uint64, st *running) bool {
		for ; st != nil; st = st.next {
			n++
			chunk[k], hs[k] = st, h
			if k++; k == prefetchChunk {
				flush()
			}
		}
		return true
	})
	flush()
	return endGroup(dst, r.sizes, g, start, at, n)
}

// RestoreGroups implements core.Snapshotter for the running aggregate.
func (r *runningOp) RestoreGroups(data []byte, keep func(group int) bool) error {
	d := decoder{b: data}
	skip := r.newRunning(tuple{}, nil)
	ng := d.uvarint()
	for range ng {
		g := int(d.uvarint())
		if d.err == nil && (g < 0 || g >= r.spec.Groups) {
			return fmt.Errorf("aggregate snapshot: key group %d of %d", g, r.spec.Groups)
		}
		nk := d.u32()
		mine := keep == nil || keep(g)
		for range nk {
			h := d.u64()
			k := r.key.readKey(&d)
			st := skip // another channel's key: read past it
			if mine {
				st = r.newRunning(k, nil)
			}
			accs := r.accs(st)
			for a := range accs {
				accs[a] = acc{n: d.varint(), i: d.varint(), w: d.u64()}
			}
			if d.err != nil {
				return d.err
			}
			if mine {
				st.next = r.state.Get(g, h)
				r.state.Put(g, h, st)
			}
		}
	}
	if d.err == nil && len(d.b) != 0 {
		return fmt.Errorf("aggregate snapshot: %d bytes left over", len(d.b))
	}
	return d.err
}

var _ core.AsyncSnapshotter = (*runningOp)(nil)
