package source

import "strings"

// internLimit bounds the distinct strings one interner keeps: a column with
// more distinct values than this is not low-cardinality, and interning it
// would only grow the table.
const internLimit = 64 << 10

// interner deduplicates the strings of one column, so that a column of
// airport codes costs one allocation per distinct code instead of one per
// record. It is bounded: after internLimit distinct values, new values are
// allocated (or passed through) but not remembered. Not safe for concurrent
// use: each column of each source has its own.
type interner struct {
	m map[string]string
}

func newInterner() *interner { return &interner{m: make(map[string]string)} }

// bytes returns b as a string. A value seen before costs no allocation:
// the map lookup m[string(b)] does not copy b.
func (in *interner) bytes(b []byte) string {
	if s, ok := in.m[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(in.m) < internLimit {
		in.m[s] = s
	}
	return s
}

// str returns s or an earlier equal string. A new s is cloned before it is
// remembered, so that the table never pins the larger buffer s may be a
// slice of (encoding/csv slices fields out of one string per record); past
// the bound s is returned as it is.
func (in *interner) str(s string) string {
	if t, ok := in.m[s]; ok {
		return t
	}
	if len(in.m) < internLimit {
		t := strings.Clone(s)
		in.m[t] = t
		return t
	}
	return s
}
