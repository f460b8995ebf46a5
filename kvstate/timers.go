package kvstate

import "slices"

// Timers indexes references to keyed state by the event time at which they
// fire (a window's end), for one channel: the derived data that lets a
// watermark find what to fire without scanning key groups. References
// carry their key group, so the entries of key groups that change owner
// can be handed to the new owner (Release, Adopt). Not safe for concurrent
// use; amortised, Add and Next allocate nothing (slices are recycled).
type Timers[R any] struct {
	byTime map[int64][]R
	times  []int64 // the keys of byTime, ascending
	spare  [][]R
	group  func(R) int
}

// NewTimers returns an empty index; group gives a reference's key group.
func NewTimers[R any](group func(R) int) *Timers[R] {
	return &Timers[R]{byTime: map[int64][]R{}, group: group}
}

// Add registers r to fire at time at.
func (t *Timers[R]) Add(at int64, r R) {
	refs, ok := t.byTime[at]
	if !ok {
		if n := len(t.spare); n > 0 {
			refs, t.spare = t.spare[n-1][:0], t.spare[:n-1]
		}
		i, _ := slices.BinarySearch(t.times, at)
		t.times = slices.Insert(t.times, i, at)
	}
	t.byTime[at] = append(refs, r)
}

// Next removes and returns the earliest time ≤ upTo and its references
// (in no defined order: callers sort what must come out ordered), or ok
// false. The caller hands refs back with
// Recycle when done.
func (t *Timers[R]) Next(upTo int64) (at int64, refs []R, ok bool) {
	if len(t.times) == 0 || t.times[0] > upTo {
		return 0, nil, false
	}
	at = t.times[0]
	t.times = t.times[1:]
	refs = t.byTime[at]
	delete(t.byTime, at)
	return at, refs, true
}

// Recycle takes back a slice Next returned.
func (t *Timers[R]) Recycle(refs []R) {
	clear(refs)
	t.spare = append(t.spare, refs[:0])
}

// Len is the number of distinct times registered.
func (t *Timers[R]) Len() int { return len(t.times) }

// Release removes the references of the given key groups and returns them
// by time, for the groups' new owner's Adopt.
func (t *Timers[R]) Release(groups []int) map[int64][]R {
	lose := make(map[int]bool, len(groups))
	for _, g := range groups {
		lose[g] = true
	}
	out := map[int64][]R{}
	keep := t.times[:0]
	for _, at := range t.times {
		refs := t.byTime[at]
		k := 0
		for _, r := range refs {
			if lose[t.group(r)] {
				out[at] = append(out[at], r)
			} else {
				refs[k] = r
				k++
			}
		}
		if k == 0 {
			delete(t.byTime, at)
			t.Recycle(refs)
			continue
		}
		clear(refs[k:])
		t.byTime[at] = refs[:k]
		keep = append(keep, at)
	}
	t.times = keep
	return out
}

// Adopt adds references another channel released.
func (t *Timers[R]) Adopt(released map[int64][]R) {
	for at, refs := range released {
		for _, r := range refs {
			t.Add(at, r)
		}
	}
}
