package kvstate

import (
	"testing"

	"pgregory.net/rapid"
)

// The Map behaves as one map per key group: a model test against plain maps.
func TestMapModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		const groups = 8
		m := NewMap[string, int](groups)
		model := make([]map[string]int, groups)
		for i := range model {
			model[i] = map[string]int{}
		}
		keys := rapid.SampledFrom([]string{"a", "b", "c", "d", "e"})
		for step := rapid.IntRange(0, 200).Draw(t, "steps"); step > 0; step-- {
			g := rapid.IntRange(0, groups-1).Draw(t, "g")
			k := keys.Draw(t, "k")
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0:
				v := rapid.Int().Draw(t, "v")
				m.Put(g, k, &v)
				model[g][k] = v
			case 1:
				m.Delete(g, k)
				delete(model[g], k)
			case 2:
				to := rapid.IntRange(0, groups-1).Draw(t, "to")
				if to != g {
					taken := m.Take(g)
					m.Give(to, taken)
					model[to], model[g] = model[g], map[string]int{}
				}
			case 3:
				got := m.Get(g, k)
				want, ok := model[g][k]
				if (got != nil) != ok || (ok && *got != want) {
					t.Fatalf("Get(%d,%q) = %v, model %v %v", g, k, got, want, ok)
				}
			}
		}
		for g := range model {
			if m.Len(g) != len(model[g]) {
				t.Fatalf("group %d has %d keys, model %d", g, m.Len(g), len(model[g]))
			}
			n := 0
			m.Range(g, func(k string, v *int) bool {
				n++
				if model[g][k] != *v {
					t.Fatalf("group %d key %q = %d, model %d", g, k, *v, model[g][k])
				}
				return true
			})
			if n != len(model[g]) {
				t.Fatalf("Range visited %d, want %d", n, len(model[g]))
			}
		}
	})
}
