package kvstate

import (
	"testing"

	"pgregory.net/rapid"
)

// The Map behaves as one map per key group: a model test against plain
// maps, with keys that collide in their home slots (equal low or high
// bits), enough of them to grow the tables, and deletions in the middle of
// probe runs.
func TestMapModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		const groups = 4
		m := NewMap[uint64, int](groups)
		model := make([]map[uint64]int, groups)
		for i := range model {
			model[i] = map[uint64]int{}
		}
		pool := make([]uint64, rapid.IntRange(1, 300).Draw(t, "pool"))
		for i := range pool {
			switch rapid.IntRange(0, 2).Draw(t, "shape") {
			case 0:
				pool[i] = uint64(i) // low bits only
			case 1:
				pool[i] = uint64(i) << 40 // high bits only
			default:
				pool[i] = rapid.Uint64().Draw(t, "key")
			}
		}
		keys := rapid.SampledFrom(pool)
		for step := rapid.IntRange(0, 2000).Draw(t, "steps"); step > 0; step-- {
			g := rapid.IntRange(0, groups-1).Draw(t, "g")
			k := keys.Draw(t, "k")
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				v := rapid.Int().Draw(t, "v")
				m.Put(g, k, &v)
				model[g][k] = v
			case 1:
				m.Delete(g, k)
				delete(model[g], k)
			case 2:
				got := m.Get(g, k)
				want, ok := model[g][k]
				if (got != nil) != ok || (ok && *got != want) {
					t.Fatalf("Get(%d, %#x) = %v, model %v %v", g, k, got, want, ok)
				}
			}
		}
		for g := range model {
			if m.Len(g) != len(model[g]) {
				t.Fatalf("group %d has %d keys, model %d", g, m.Len(g), len(model[g]))
			}
			for k, want := range model[g] {
				if got := m.Get(g, k); got == nil || *got != want {
					t.Fatalf("group %d key %#x = %v, model %d", g, k, got, want)
				}
			}
			n := 0
			m.Range(g, func(k uint64, v *int) bool {
				n++
				if want, ok := model[g][k]; !ok || want != *v {
					t.Fatalf("group %d key %#x = %d, model %d %v", g, k, *v, want, ok)
				}
				return true
			})
			if n != len(model[g]) {
				t.Fatalf("Range visited %d, want %d", n, len(model[g]))
			}
		}
	})
}

// BenchmarkMapGet finds random keys among 1,000,000 in 4096 groups (state
// far larger than the caches), in this Map and in the Go maps it replaced.
func BenchmarkMapGet(b *testing.B) {
	const keys, groups = 1_000_000, 4096
	hs := make([]uint64, keys)
	x := uint64(88172645463325252)
	for i := range hs {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		hs[i] = x
	}
	vals := make([]int, keys)
	probe := make([]int, 1<<16)
	for i := range probe {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		probe[i] = int(x % keys)
	}
	b.Run("kvstate.Map", func(b *testing.B) {
		m := NewMap[uint64, int](groups)
		for i, h := range hs {
			m.Put(KeyGroup(h, groups), h, &vals[i])
		}
		b.ResetTimer()
		for n := range b.N {
			h := hs[probe[n&(len(probe)-1)]]
			if m.Get(KeyGroup(h, groups), h) == nil {
				b.Fatal("missing")
			}
		}
	})
	b.Run("go-maps", func(b *testing.B) {
		m := make([]map[uint64]*int, groups)
		for i, h := range hs {
			g := KeyGroup(h, groups)
			if m[g] == nil {
				m[g] = map[uint64]*int{}
			}
			m[g][h] = &vals[i]
		}
		b.ResetTimer()
		for n := range b.N {
			h := hs[probe[n&(len(probe)-1)]]
			if m[KeyGroup(h, groups)][h] == nil {
				b.Fatal("missing")
			}
		}
	})
}
