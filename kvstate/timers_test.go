package kvstate

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

type tref struct{ g, id int }

// Timers behave as a sorted multimap, and Release/Adopt move exactly the
// released groups' entries — into an index that holds timers of its own,
// one group at a time or (over 64 groups) by rebuilding the heap.
func TestTimersModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.SampledFrom([]int{8, 300}).Draw(t, "groups")
		a := NewTimers(n, func(r tref) int { return r.g })
		b := NewTimers(n, func(r tref) int { return r.g })
		model := map[int64][]tref{}  // a's entries
		modelB := map[int64][]tref{} // b's own entries
		for i := rapid.IntRange(0, 3*n).Draw(t, "n") + (n-8)*2; i > 0; i-- {
			at := rapid.Int64Range(0, 20).Draw(t, "at")
			r := tref{g: rapid.IntRange(0, n-1).Draw(t, "g"), id: i}
			if rapid.IntRange(0, 3).Draw(t, "side") == 0 {
				b.Add(at, r)
				modelB[at] = append(modelB[at], r)
			} else {
				a.Add(at, r)
				model[at] = append(model[at], r)
			}
		}
		// b's own groups are never released by a (one owner per group).
		var groups []int
		for g := range n {
			if rapid.IntRange(0, 3).Draw(t, "keep") > 0 && !ownsAny(modelB, g) {
				groups = append(groups, g)
			}
		}
		b.Adopt(a.Release(groups))
		drain := func(ti *Timers[tref]) map[int64][]tref {
			out := map[int64][]tref{}
			last := int64(-1)
			for {
				at, refs, ok := ti.Next(1 << 62)
				if !ok {
					return out
				}
				if at <= last {
					t.Fatalf("times out of order: %d after %d", at, last)
				}
				last = at
				out[at] = append([]tref(nil), refs...)
				ti.Recycle(refs)
			}
		}
		ga, gb := drain(a), drain(b)
		times := map[int64]bool{}
		for at := range model {
			times[at] = true
		}
		for at := range modelB {
			times[at] = true
		}
		for at := range times {
			var gotA []tref
			gotB := append([]tref(nil), modelB[at]...)
			for _, r := range model[at] {
				if slices.Contains(groups, r.g) {
					gotB = append(gotB, r)
				} else {
					gotA = append(gotA, r)
				}
			}
			sortRefs := func(s []tref) { slices.SortFunc(s, func(x, y tref) int { return x.id - y.id }) }
			sortRefs(gotA)
			sortRefs(gotB)
			ha, hb := append([]tref(nil), ga[at]...), append([]tref(nil), gb[at]...)
			sortRefs(ha)
			sortRefs(hb)
			if !slices.Equal(ha, gotA) || !slices.Equal(hb, gotB) {
				t.Fatalf("time %d: kept %v released %v; want %v and %v", at, ha, hb, gotA, gotB)
			}
		}
	})
}

func ownsAny(m map[int64][]tref, g int) bool {
	for _, rs := range m {
		for _, r := range rs {
			if r.g == g {
				return true
			}
		}
	}
	return false
}

func TestTimersNextBound(t *testing.T) {
	ti := NewTimers(4, func(r tref) int { return r.g })
	ti.Add(10, tref{id: 1})
	ti.Add(5, tref{id: 2, g: 3})
	ti.Add(5, tref{id: 3, g: 1})
	if _, _, ok := ti.Next(4); ok {
		t.Fatal("fired before its time")
	}
	at, refs, ok := ti.Next(10)
	if !ok || at != 5 || len(refs) != 2 {
		t.Fatalf("Next = %d %v %v, want time 5 with both groups' references", at, refs, ok)
	}
	ti.Recycle(refs)
	at, refs, ok = ti.Next(10)
	if !ok || at != 10 || len(refs) != 1 || refs[0].id != 1 {
		t.Fatalf("second Next = %d %v %v", at, refs, ok)
	}
	ti.Recycle(refs)
	if _, _, ok := ti.Next(1 << 40); ok {
		t.Fatal("timers left")
	}
}
