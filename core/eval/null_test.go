package eval

import (
	"errors"
	"testing"

	"streamd/core"
)

var nullableSchema = core.MustSchema(
	core.Field{Name: "v", Type: core.Int64, Nullable: true},
	core.Field{Name: "s", Type: core.String, Nullable: true},
	core.Field{Name: "d", Type: core.Int64},
)

// Expressions over nulls: nil to the expression, ?? and == nil handle it,
// an operation failing on it gives null, a null condition is not true,
// and a failure without a null stays an error.
func TestEvalNulls(t *testing.T) {
	null := []core.Value{core.Null(), core.Null(), core.IntValue(0)}
	full := []core.Value{core.IntValue(4), core.StringValue("ab"), core.IntValue(0)}
	for _, c := range []struct {
		src        string
		null, full string // NULL, or the value's text
	}{
		{"v + 1", "NULL", "5"},
		{"v ?? -1", "-1", "4"},
		{"v == nil", "true", "false"},
		{"v == nil ? 0 : v * 2", "0", "8"},
		{"v > 3", "NULL", "true"},
		{"v == nil || v > 3", "true", "true"},
		{"upper(s)", "NULL", "AB"},
		{"s + \"x\"", "NULL", "abx"},
		{"d + 1", "1", "1"},
	} {
		p, err := Compile(c.src, nullableSchema)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		for _, r := range []struct {
			row  []core.Value
			want string
		}{{null, c.null}, {full, c.full}} {
			v, err := p.Eval(r.row)
			if err != nil {
				t.Fatalf("%s: %v", c.src, err)
			}
			got := "NULL"
			if !v.IsNull() {
				got = string(core.AppendText(nil, p.Type(), v))
			}
			if got != r.want {
				t.Errorf("%s over %v: %s, want %s", c.src, r.row, got, r.want)
			}
		}
		if p.Nullable() != (c.src != "d + 1") {
			t.Errorf("%s: Nullable %v", c.src, p.Nullable())
		}
	}
	p, _ := Compile("v > 3", nullableSchema)
	if ok, err := p.EvalBool(null); ok || err != nil {
		t.Errorf("EvalBool(v > 3) over null: %v, %v; want false (null is not true)", ok, err)
	}
	p, _ = Compile("v + 1", nullableSchema)
	if _, err := p.EvalInt(null); !errors.Is(err, ErrNull) {
		t.Errorf("EvalInt over null: %v, want ErrNull", err)
	}
	// % by zero with no null read stays an error.
	p, _ = Compile("d % d + (v ?? 0)", nullableSchema)
	if _, err := p.Eval(full); err == nil {
		t.Error("d % 0 over a record without nulls: no error")
	}
}

// A nullable program keeps the allocation-free path for records without
// a null.
func TestNullableFastPathAllocs(t *testing.T) {
	p, err := Compile("v > 3 && d < 10", nullableSchema)
	if err != nil || !p.Fast() {
		t.Fatalf("%v, fast %v", err, p.Fast())
	}
	row := []core.Value{core.IntValue(4), core.StringValue("ab"), core.IntValue(0)}
	if a := testing.AllocsPerRun(100, func() { p.EvalBool(row) }); a != 0 {
		t.Fatalf("%v allocs per record without nulls, want 0", a)
	}
}

// An expression may give null itself, over fields that are never null
// (`d > 3 ? nil : d`, `x ?? nil`): it is Nullable, so a map field made of
// it is nullable, and a nil result is core.Null, not an error. Without a
// nil branch an expression over plain fields is not Nullable.
func TestEvalReturnsNil(t *testing.T) {
	for _, c := range []struct {
		src      string
		nullable bool
	}{
		{"d > 3 ? nil : d", true},
		{"d > 3 ? d : (d > 1 ? nil : 0)", true},
		{"v ?? nil", true},
		{"d > 3 ? 1 : d", false},
		{"d ?? 2", false},
	} {
		p, err := Compile(c.src, nullableSchema)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		if p.returnsNil != c.nullable {
			t.Errorf("%s: may give nil %v, want %v", c.src, p.returnsNil, c.nullable)
		}
	}
	p, err := Compile("d > 3 ? nil : d", nullableSchema)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Nullable() || p.Type() != core.Int64 {
		t.Fatalf("Nullable %v, type %s; want true, int64", p.Nullable(), p.Type())
	}
	for d, want := range map[int64]string{2: "2", 5: "NULL"} {
		v, err := p.Eval([]core.Value{core.IntValue(1), core.StringValue("x"), core.IntValue(d)})
		if err != nil {
			t.Fatalf("d=%d: %v", d, err)
		}
		got := "NULL"
		if !v.IsNull() {
			got = string(core.AppendText(nil, core.Int64, v))
		}
		if got != want {
			t.Errorf("d=%d: %s, want %s", d, got, want)
		}
	}
}
