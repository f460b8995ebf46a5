package window

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"streamd/core"
)

// sortByKey orders references exactly as keyDef.compare does, for string
// keys (including long shared prefixes, zero bytes, one key a prefix of
// another), integer keys (negative too) and two-field keys, with and
// without nullable fields holding nulls (sorted last).
func TestSortByKey(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		types := rapid.SampledFrom([][]core.Type{{core.String}, {core.Int64}, {core.Float64}, {core.String, core.Int64}, {core.Int64, core.String}}).Draw(t, "types")
		nullable := rapid.Bool().Draw(t, "nullable")
		w := &windowOp{key: keyDef{types: types, idx: make([]int, len(types)), nullable: make([]bool, len(types)), anyNull: nullable}}
		for j := range types {
			w.key.nullable[j] = nullable
		}
		str := rapid.OneOf(rapid.StringMatching(`[a\x00]{0,20}`), rapid.StringMatching(`customer-0000000[0-9]{1,3}`), rapid.String())
		n := rapid.IntRange(0, 60).Draw(t, "n")
		refs := make([]ref, n)
		for i := range refs {
			st := &keyState{}
			for j, typ := range types {
				if nullable && rapid.IntRange(0, 4).Draw(t, "null") == 0 {
					st.key[j] = core.Null()
					continue
				}
				switch typ {
				case core.String:
					st.key[j] = core.StringValue(str.Draw(t, "s"))
				case core.Float64:
					st.key[j] = core.FloatValue(rapid.Float64().Draw(t, "f"))
				default:
					st.key[j] = core.IntValue(rapid.Int64().Draw(t, "i"))
				}
			}
			refs[i] = ref{st: st}
		}
		want := slices.Clone(refs)
		slices.SortStableFunc(want, func(a, b ref) int { return w.key.compare(&a.st.key, &b.st.key) })
		w.sortByKey(refs)
		for i := range refs {
			if w.key.compare(&refs[i].st.key, &want[i].st.key) != 0 {
				t.Fatalf("position %d: %v, want %v", i, refs[i].st.key[:len(types)], want[i].st.key[:len(types)])
			}
			if i > 0 && refs[i-1].st.key[0].IsNull() && !refs[i].st.key[0].IsNull() {
				t.Fatalf("position %d: a non-null first field after a null", i)
			}
		}
	})
}
