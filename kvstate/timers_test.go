package kvstate

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

type tref struct{ g, id int }

// Timers behave as a sorted multimap, and Release/Adopt move exactly the
// released groups' entries.
func TestTimersModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := NewTimers(8, func(r tref) int { return r.g })
		b := NewTimers(8, func(r tref) int { return r.g })
		model := map[int64][]tref{}
		for i := rapid.IntRange(0, 100).Draw(t, "n"); i > 0; i-- {
			at := rapid.Int64Range(0, 20).Draw(t, "at")
			r := tref{g: rapid.IntRange(0, 7).Draw(t, "g"), id: i}
			a.Add(at, r)
			model[at] = append(model[at], r)
		}
		groups := []int{rapid.IntRange(0, 7).Draw(t, "lose1"), rapid.IntRange(0, 7).Draw(t, "lose2")}
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
		for at, want := range model {
			var gotA, gotB []tref
			for _, r := range want {
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
