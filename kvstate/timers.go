package kvstate

import (
	"math"
	"slices"
)

// Timers indexes references to keyed state by the event time at which they
// fire (a window's end), for one channel: the derived data that lets a
// watermark find what to fire without scanning key groups.
//
// The index is kept per key group, with a min-heap of each group's
// earliest time, so that key groups changing owner move by pointer:
// Release and Adopt cost O(groups moved · log), independent of how much
// state the groups hold (the pause of a live channel change must not grow
// with state size). Not safe for concurrent use; amortised, Add and Next
// allocate nothing per reference.
type Timers[R any] struct {
	groups []*groupTimers[R] // by key group; nil: none here
	// first[g] is group g's earliest time when armed[g] (it has timers
	// here): dense, so that moving many groups reads no group's index.
	first   []int64
	armed   []bool
	heap    timeHeap // (earliest time, group), possibly stale
	group   func(R) int
	scratch []R
	spare   [][]R
}

type groupTimers[R any] struct {
	byTime map[int64][]R
	times  []int64 // keys of byTime, ascending
}

type timeEntry struct {
	at int64
	g  int
}

// timeHeap is a binary min-heap by time (no container/heap: its any
// arguments would allocate on every push).
type timeHeap []timeEntry

func (h *timeHeap) push(e timeEntry) {
	*h = append(*h, e)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if s[p].at <= s[i].at {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func (h *timeHeap) pop() {
	s := *h
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	s.down(0)
	*h = s
}

// down restores the heap order below i.
func (s timeHeap) down(i int) {
	n := len(s)
	for {
		l, m := 2*i+1, i
		if l < n && s[l].at < s[m].at {
			m = l
		}
		if r := l + 1; r < n && s[r].at < s[m].at {
			m = r
		}
		if m == i {
			return
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
}

// fix re-establishes the heap order over all entries in O(len).
func (s timeHeap) fix() {
	for i := len(s)/2 - 1; i >= 0; i-- {
		s.down(i)
	}
}

// NewTimers returns an empty index over groups key groups; group gives a
// reference's key group.
func NewTimers[R any](groups int, group func(R) int) *Timers[R] {
	return &Timers[R]{groups: make([]*groupTimers[R], groups), first: make([]int64, groups), armed: make([]bool, groups), group: group}
}

// Add registers r to fire at time at.
func (t *Timers[R]) Add(at int64, r R) {
	g := t.group(r)
	gt := t.groups[g]
	if gt == nil {
		gt = &groupTimers[R]{byTime: map[int64][]R{}}
		t.groups[g] = gt
	}
	refs, ok := gt.byTime[at]
	if !ok {
		if n := len(t.spare); n > 0 {
			refs, t.spare = t.spare[n-1][:0], t.spare[:n-1]
		}
		i, _ := slices.BinarySearch(gt.times, at)
		gt.times = slices.Insert(gt.times, i, at)
		if i == 0 {
			t.heap.push(timeEntry{at: at, g: g})
			t.first[g], t.armed[g] = at, true
		}
	}
	gt.byTime[at] = append(refs, r)
}

// Next removes and returns the earliest time ≤ upTo and all references
// registered for it (in no defined order: callers sort what must come out
// ordered), or ok false. The caller hands refs back with Recycle.
func (t *Timers[R]) Next(upTo int64) (at int64, refs []R, ok bool) {
	refs = t.scratch[:0]
	for len(t.heap) > 0 {
		e := t.heap[0]
		if e.at > upTo || (ok && e.at != at) {
			break
		}
		t.heap.pop()
		if !t.armed[e.g] || t.first[e.g] != e.at {
			continue // stale: the group moved away or fired already
		}
		gt := t.groups[e.g]
		at, ok = e.at, true
		gtRefs := gt.byTime[e.at]
		refs = append(refs, gtRefs...)
		delete(gt.byTime, e.at)
		clear(gtRefs)
		t.spare = append(t.spare, gtRefs[:0])
		gt.times = append(gt.times[:0], gt.times[1:]...) // keep the capacity
		if len(gt.times) > 0 {
			t.heap.push(timeEntry{at: gt.times[0], g: e.g})
			t.first[e.g] = gt.times[0]
		} else {
			t.armed[e.g] = false
		}
	}
	t.scratch = refs
	return at, refs, ok
}

// NextFired is Next for timers registered at window ends: it returns the
// earliest end whose window has fired at watermark wm, i.e. end-1 ≤ wm
// (wm = math.MaxInt64 fires everything).
func (t *Timers[R]) NextFired(wm int64) (end int64, refs []R, ok bool) {
	if wm == math.MaxInt64 {
		return t.Next(wm)
	}
	return t.Next(wm + 1)
}

// Recycle takes back the slice Next returned.
func (t *Timers[R]) Recycle(refs []R) {
	clear(refs)
	t.scratch = refs[:0]
}

// TimersHandoff carries key groups' timers from their old owner's index to
// the new owner's (Release, Adopt).
type TimersHandoff[R any] struct {
	groups []int
	timers []*groupTimers[R]
	first  []int64
	armed  []bool
}

// Release removes the given key groups' timers and returns them, by
// pointer, for the new owner's Adopt.
func (t *Timers[R]) Release(groups []int) *TimersHandoff[R] {
	n := len(groups)
	h := &TimersHandoff[R]{groups: make([]int, 0, n), timers: make([]*groupTimers[R], 0, n), first: make([]int64, 0, n), armed: make([]bool, 0, n)}
	for _, g := range groups {
		if gt := t.groups[g]; gt != nil {
			h.groups = append(h.groups, g)
			h.timers = append(h.timers, gt)
			h.first = append(h.first, t.first[g])
			h.armed = append(h.armed, t.armed[g])
			t.groups[g], t.armed[g] = nil, false // its heap entries go stale
		}
	}
	if len(t.heap) > 2*len(t.groups) {
		t.rebuild() // stale entries outnumber the groups
	}
	return h
}

// rebuild replaces the heap by one entry per group holding timers, in
// O(groups): stale entries (groups released or fired) are dropped.
func (t *Timers[R]) rebuild() {
	t.heap = t.heap[:0]
	for g, ok := range t.armed {
		if ok {
			t.heap = append(t.heap, timeEntry{at: t.first[g], g: g})
		}
	}
	t.heap.fix()
}

// Adopt installs timers another channel released: one heap push per group,
// or, for many groups at once, one rebuild of the heap (O(groups), which
// also drops stale entries).
func (t *Timers[R]) Adopt(h *TimersHandoff[R]) {
	bulk := len(h.groups) > 64
	for i, g := range h.groups {
		t.groups[g], t.first[g], t.armed[g] = h.timers[i], h.first[i], h.armed[i]
		if !bulk && h.armed[i] {
			t.heap.push(timeEntry{at: h.first[i], g: g})
		}
	}
	if bulk {
		t.rebuild()
	}
}
