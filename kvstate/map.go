package kvstate

// Map is typed per-key state partitioned by key group: each group is a Go
// map from key to *V. All channels of a region share one Map; each touches
// only the groups it owns (see the package invariants), so Map has no locks.
// Get, Put and Delete cost one map operation; Put of a new key may grow the
// group's map (amortised, per new key, not per record).
type Map[K comparable, V any] struct {
	groups []map[K]*V
}

// NewMap returns an empty Map over groups key groups.
func NewMap[K comparable, V any](groups int) *Map[K, V] {
	return &Map[K, V]{groups: make([]map[K]*V, groups)}
}

// Groups is the number of key groups.
func (m *Map[K, V]) Groups() int { return len(m.groups) }

// Get returns the state of key k in group g, or nil.
func (m *Map[K, V]) Get(g int, k K) *V { return m.groups[g][k] }

// Put sets the state of key k in group g. The map keeps v (a pointer).
func (m *Map[K, V]) Put(g int, k K, v *V) {
	gm := m.groups[g]
	if gm == nil {
		gm = make(map[K]*V)
		m.groups[g] = gm
	}
	gm[k] = v
}

// Delete removes key k from group g.
func (m *Map[K, V]) Delete(g int, k K) { delete(m.groups[g], k) }

// Len is the number of keys in group g.
func (m *Map[K, V]) Len(g int) int { return len(m.groups[g]) }

// Range calls fn for every key of group g, in no defined order, until fn
// returns false. fn must not add keys to group g; it may delete the key it
// is given.
func (m *Map[K, V]) Range(g int, fn func(k K, v *V) bool) {
	for k, v := range m.groups[g] {
		if !fn(k, v) {
			return
		}
	}
}

// Take removes group g's state and returns it, for a hand-off to another
// Map or for a snapshot. The caller owns the returned map.
func (m *Map[K, V]) Take(g int) map[K]*V {
	gm := m.groups[g]
	m.groups[g] = nil
	return gm
}

// Give installs state for group g (replacing whatever was there).
func (m *Map[K, V]) Give(g int, gm map[K]*V) { m.groups[g] = gm }
