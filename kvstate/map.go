package kvstate

import "math/bits"

// Key is what a Map is keyed by: a key's 64-bit hash (or an integer key).
type Key interface{ ~uint64 | ~int64 }

// Map is typed per-key state partitioned by key group: each group is an
// open-addressing hash table (linear probing, backward-shift deletion, at
// most 7/8 full) of (key, *V) slots, 16 bytes each, so that finding a key
// reads one slot array, mostly one cache line of it. With state far larger
// than the caches that is one trip to memory where a Go map takes two or
// three (map header, table, group); BenchmarkMapGet compares them. All
// channels of a region share one Map; each touches only the groups it owns
// (see the package invariants), so Map has no locks. Get, Put and Delete
// allocate nothing; Put of a new key may grow the group's table (amortised,
// per new key, not per record).
type Map[K Key, V any] struct {
	groups []table[K, V]
}

type table[K Key, V any] struct {
	slots []slot[K, V] // a power of two long, or nil
	shift uint8        // 64 - log2(len(slots))
	n     int
}

// slot holds key k's state v; v == nil marks an empty slot (Put never
// stores nil).
type slot[K Key, V any] struct {
	k K
	v *V
}

// NewMap returns an empty Map over groups key groups.
func NewMap[K Key, V any](groups int) *Map[K, V] {
	return &Map[K, V]{groups: make([]table[K, V], groups)}
}

// Groups is the number of key groups.
func (m *Map[K, V]) Groups() int { return len(m.groups) }

// home is key k's first slot: the top bits of k times 2^64/φ (Fibonacci
// hashing), since a group's keys share the bits that chose the group.
func (t *table[K, V]) home(k K) int {
	return int((uint64(k) * 0x9e3779b97f4a7c15) >> t.shift)
}

// Get returns the state of key k in group g, or nil.
func (m *Map[K, V]) Get(g int, k K) *V {
	t := &m.groups[g]
	if t.n == 0 {
		return nil
	}
	mask := len(t.slots) - 1
	for i := t.home(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.v == nil {
			return nil
		}
		if s.k == k {
			return s.v
		}
	}
}

// Put sets the state of key k in group g (v must not be nil). The map keeps
// v (a pointer).
func (m *Map[K, V]) Put(g int, k K, v *V) {
	if v == nil {
		panic("kvstate: Put of a nil state")
	}
	t := &m.groups[g]
	if (t.n+1)*8 > len(t.slots)*7 {
		t.grow()
	}
	if t.insert(k, v) {
		t.n++
	}
}

// insert sets k's slot to v; it reports whether k is new.
func (t *table[K, V]) insert(k K, v *V) bool {
	mask := len(t.slots) - 1
	for i := t.home(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.v == nil {
			s.k, s.v = k, v
			return true
		}
		if s.k == k {
			s.v = v
			return false
		}
	}
}

// grow doubles the table (at least 8 slots) and re-inserts every key.
func (t *table[K, V]) grow() {
	old := t.slots
	n := max(8, 2*len(old))
	t.slots = make([]slot[K, V], n)
	t.shift = uint8(64 - bits.TrailingZeros(uint(n)))
	for _, s := range old {
		if s.v != nil {
			t.insert(s.k, s.v)
		}
	}
}

// Delete removes key k from group g. Later slots of the same probe run
// shift back into the gap (no tombstones), so lookups never scan deleted
// slots.
func (m *Map[K, V]) Delete(g int, k K) {
	t := &m.groups[g]
	if t.n == 0 {
		return
	}
	mask := len(t.slots) - 1
	i := t.home(k)
	for ; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.v == nil {
			return // not present
		}
		if s.k == k {
			break
		}
	}
	for j := (i + 1) & mask; t.slots[j].v != nil; j = (j + 1) & mask {
		// The key at j may fill the gap at i if i lies on its probe run
		// from its home to j.
		if h := t.home(t.slots[j].k); (j-h)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = slot[K, V]{}
	t.n--
}

// Len is the number of keys in group g.
func (m *Map[K, V]) Len(g int) int { return m.groups[g].n }

// Range calls fn for every key of group g, in no defined order, until fn
// returns false. fn must not add or delete keys of group g.
func (m *Map[K, V]) Range(g int, fn func(k K, v *V) bool) {
	for _, s := range m.groups[g].slots {
		if s.v != nil && !fn(s.k, s.v) {
			return
		}
	}
}
