package window

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"streamd/core"
)

// MaxKeyFields is the most fields a grouping key may have.
const MaxKeyFields = 4

// tuple holds a record's key fields; unused slots are zero. It is
// comparable, so it keys Go maps without building strings.
type tuple [MaxKeyFields]core.Value

type keyDef struct {
	idx   []int
	types []core.Type
	names []string
	// nullable[j] says key field j may be core.Null: null is a key of its
	// own (SQL's GROUP BY), sorted after every other value (NULLS LAST);
	// anyNull says some field is. Keys without nullable fields take the
	// paths that never check.
	nullable []bool
	anyNull  bool
}

func bindKey(names []string, in *core.Schema) (keyDef, error) {
	if len(names) == 0 {
		return keyDef{}, fmt.Errorf("no key fields")
	}
	if len(names) > MaxKeyFields {
		return keyDef{}, fmt.Errorf("%d key fields, at most %d", len(names), MaxKeyFields)
	}
	k := keyDef{names: names}
	for _, n := range names {
		i, err := in.Lookup(n)
		if err != nil {
			return keyDef{}, fmt.Errorf("key: %w", err)
		}
		k.idx = append(k.idx, i)
		k.types = append(k.types, in.Fields[i].Type)
		k.nullable = append(k.nullable, in.Fields[i].Nullable)
		k.anyNull = k.anyNull || in.Fields[i].Nullable
	}
	return k, nil
}

// CheckPartitioning verifies that grouping by key keeps every group inside
// one channel of a region partitioned by regionKey: every region key field
// must be a key field.
func CheckPartitioning(key, regionKey []string) error {
	for _, r := range regionKey {
		if !slices.Contains(key, r) {
			return fmt.Errorf("key %v does not include the region's key field %q: one group would span channels", key, r)
		}
	}
	return nil
}

func (k *keyDef) of(row []core.Value) (t tuple) {
	for j, i := range k.idx {
		t[j] = row[i]
	}
	return t
}

// prefix returns a sort key of t's first field in two words that order
// as compare does as far as they go (equal words: compare decides): a
// string's first 16 bytes, big-endian; an integer, timestamp or bool as a
// signed number; nothing for a float. A null is all ones in both words
// (with lo 1 for an integer), after every non-null prefix: nulls last.
func (k *keyDef) prefix(t *tuple) (hi, lo uint64) {
	if k.nullable[0] && t[0].IsNull() {
		return math.MaxUint64, math.MaxUint64
	}
	switch k.types[0] {
	case core.String:
		var b [16]byte
		copy(b[:], t[0].Str())
		return binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	case core.Float64:
		return 0, 0
	}
	return uint64(t[0].Int()) ^ 1<<63, 0
}

// equal says whether a and b, tuples of this key, are the same key (==,
// comparing only the key's fields, quick for interned strings).
func (k *keyDef) equal(a, b *tuple) bool {
	for j := range k.idx {
		if !a[j].Same(b[j]) {
			return false
		}
	}
	return true
}

func (k *keyDef) compare(a, b *tuple) int {
	if k.anyNull {
		for j, typ := range k.types {
			if c := core.CompareNullable(typ, a[j], b[j]); c != 0 {
				return c
			}
		}
		return 0
	}
	for j, typ := range k.types {
		if c := core.Compare(typ, a[j], b[j]); c != 0 {
			return c
		}
	}
	return 0
}

func (k *keyDef) fields() []core.Field {
	fs := make([]core.Field, len(k.idx))
	for j := range k.idx {
		fs[j] = core.Field{Name: k.names[j], Type: k.types[j], Nullable: k.nullable[j]}
	}
	return fs
}
