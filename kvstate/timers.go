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
	groups  []*groupTimers[R] // by key group; nil: none here
	heap    timeHeap          // (earliest time, group), possibly stale
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
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && s[l].at < s[m].at {
			m = l
		}
		if r := l + 1; r < n && s[r].at < s[m].at {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
}

// NewTimers returns an empty index over groups key groups; group gives a
// reference's key group.
func NewTimers[R any](groups int, group func(R) int) *Timers[R] {
	return &Timers[R]{groups: make([]*groupTimers[R], groups), group: group}
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
		gt := t.groups[e.g]
		if gt == nil || len(gt.times) == 0 || gt.times[0] != e.at {
			continue // stale: the group moved away or fired already
		}
		at, ok = e.at, true
		gtRefs := gt.byTime[e.at]
		refs = append(refs, gtRefs...)
		delete(gt.byTime, e.at)
		clear(gtRefs)
		t.spare = append(t.spare, gtRefs[:0])
		gt.times = append(gt.times[:0], gt.times[1:]...) // keep the capacity
		if len(gt.times) > 0 {
			t.heap.push(timeEntry{at: gt.times[0], g: e.g})
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
}

// Release removes the given key groups' timers and returns them, by
// pointer, for the new owner's Adopt.
func (t *Timers[R]) Release(groups []int) *TimersHandoff[R] {
	h := &TimersHandoff[R]{}
	for _, g := range groups {
		if gt := t.groups[g]; gt != nil {
			h.groups = append(h.groups, g)
			h.timers = append(h.timers, gt)
			t.groups[g] = nil // its heap entries go stale
		}
	}
	return h
}

// Adopt installs timers another channel released.
func (t *Timers[R]) Adopt(h *TimersHandoff[R]) {
	for i, g := range h.groups {
		gt := h.timers[i]
		t.groups[g] = gt
		if len(gt.times) > 0 {
			t.heap.push(timeEntry{at: gt.times[0], g: g})
		}
	}
}
