package eval

import (
	"fmt"
	"math"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"streamd/core"
)

// The property: on every record, the fast path and expr-lang's vm agree —
// same value (NaN equals NaN) or both an error.

var propSchema = core.MustSchema(
	core.Field{Name: "i", Type: core.Int64},
	core.Field{Name: "j", Type: core.Int64},
	core.Field{Name: "f", Type: core.Float64},
	core.Field{Name: "g", Type: core.Float64},
	core.Field{Name: "s", Type: core.String},
	core.Field{Name: "t", Type: core.String},
	core.Field{Name: "b", Type: core.Bool},
	core.Field{Name: "c", Type: core.Bool},
	core.Field{Name: "ts", Type: core.Timestamp},
	core.Field{Name: "tu", Type: core.Timestamp},
)

// fixedExprs covers the fast subset by hand; all must take the fast path.
var fixedExprs = []string{
	"i > 15", "15 < i", "i == j", "i != 3", "i <= f", "f >= i", "f == g", "f != 0.5",
	"i + j", "i - j", "i * j", "i % j", "i % 3", "-i", "+f", "i / j", "f / g", "i * 2 + f",
	"f * 2 + i", "2 - f", "i ** 2", "f ^ g", "abs(i)", "abs(f)", "int(f)", "float(i)",
	"ceil(f)", "floor(i)", "round(f)", "len(s)", "lower(s)", "upper(t)", "s + t",
	"s == t", "s < t", "s >= 'b'", "s in ['a', 'bc', 'é']", "i in [1, 2, 3]", "i in [1, 2.5]",
	"f in [0, 1, -1, 0.5]", "i in [0,1,2,3,4,5,6,7,8,9,10]", "s in ['a','b','c','d','e','f','g','h','i','j']",
	"s contains t", "s startsWith 'a'", "t endsWith s", "s matches '^a+$'",
	"b && c", "b || !c", "b and not c", "b == c", "b != c",
	"b ? i : j", "b ? f : i", "c ? s : t", "b ? (c ? i : 2.5) : f", "i > 0 ? i % j : -1",
	"ts < tu", "ts == tu", "tu - ts", "ts + duration('90m')", "ts - duration('1ms') < tu",
	"tu - ts > duration('1h')", "(tu - ts) + duration('1s')", "i not in [4, 5]",
	"duration('1s') * i", "j * duration('-90m')", "duration('1ms') * i + duration('1h') > duration('2h')",
	"(i + 1) * (j - 1) % 7", "1 + 2 * 3 > i", "f * 0 == 0", "-(-f)",
}

func genRow(t *rapid.T) []core.Value {
	ints := rapid.OneOf(rapid.Int64Range(-5, 5), rapid.Int64(),
		rapid.SampledFrom([]int64{math.MinInt64, math.MaxInt64, 1 << 53, 1<<53 + 1}))
	floats := rapid.OneOf(rapid.Float64Range(-10, 10), rapid.Float64(),
		rapid.SampledFrom([]float64{0, math.Copysign(0, -1), 0.5, 2.5, math.NaN(), math.Inf(1), math.Inf(-1), 1 << 53}))
	strs := rapid.SampledFrom([]string{"", "a", "aa", "b", "bc", "é", "ß", "AbC", "a,b"})
	// Timestamps stay inside ±4e18 ns (years 1843–2096) so that ts ±
	// duration cannot leave the int64 ns range, where the fast path wraps
	// and the vm's time.Time does not (see TestTimeExtremes).
	times := rapid.OneOf(rapid.Int64Range(-1e12, 1e12), rapid.Int64Range(-4e18, 4e18))
	return []core.Value{
		core.IntValue(ints.Draw(t, "i")), core.IntValue(ints.Draw(t, "j")),
		core.FloatValue(floats.Draw(t, "f")), core.FloatValue(floats.Draw(t, "g")),
		core.StringValue(strs.Draw(t, "s")), core.StringValue(strs.Draw(t, "t")),
		core.BoolValue(rapid.Bool().Draw(t, "b")), core.BoolValue(rapid.Bool().Draw(t, "c")),
		core.TimeValue(times.Draw(t, "ts")), core.TimeValue(times.Draw(t, "tu")),
	}
}

// genExpr draws a random expression of type want from the fast subset.
func genExpr(t *rapid.T, want core.Type, depth int) string {
	leaf := depth <= 0 || rapid.IntRange(0, 3).Draw(t, "leaf") == 0
	pick := func(options ...string) string { return rapid.SampledFrom(options).Draw(t, "op") }
	sub := func(w core.Type) string { return genExpr(t, w, depth-1) }
	num := func() string { return sub(rapid.SampledFrom([]core.Type{core.Int64, core.Float64}).Draw(t, "num")) }
	switch want {
	case core.Int64:
		if leaf {
			if rapid.Bool().Draw(t, "field") {
				return pick("i", "j")
			}
			return intLit(rapid.OneOf(rapid.Int64Range(-3, 10), rapid.Int64()).Draw(t, "lit"))
		}
		switch rapid.IntRange(0, 6).Draw(t, "form") {
		case 0, 1:
			return "(" + sub(core.Int64) + " " + pick("+", "-", "*", "%") + " " + sub(core.Int64) + ")"
		case 2:
			return pick("-", "abs(") + "(" + sub(core.Int64) + ")" + ")"[:0]
		case 3:
			return "len(" + sub(core.String) + ")"
		case 4:
			return "int(" + sub(core.Float64) + ")"
		case 5:
			return "abs(" + sub(core.Int64) + ")"
		default:
			return "(" + sub(core.Bool) + " ? " + sub(core.Int64) + " : " + sub(core.Int64) + ")"
		}
	case core.Float64:
		if leaf {
			if rapid.Bool().Draw(t, "field") {
				return pick("f", "g")
			}
			return floatLit(rapid.SampledFrom([]float64{0.5, 1.5, -2.25, 1e300, 3}).Draw(t, "lit"))
		}
		switch rapid.IntRange(0, 5).Draw(t, "form") {
		case 0, 1:
			// At least one float operand makes the result float.
			return "(" + sub(core.Float64) + " " + pick("+", "-", "*", "/") + " " + num() + ")"
		case 2:
			return "(" + num() + " " + pick("/", "**", "^") + " " + num() + ")"
		case 3:
			return pick("-", "abs", "ceil", "floor", "round") + "(" + sub(core.Float64) + ")"
		case 4:
			return "float(" + sub(core.Int64) + ")"
		default:
			return "(" + sub(core.Bool) + " ? " + sub(core.Float64) + " : " + sub(core.Float64) + ")"
		}
	case core.String:
		if leaf {
			if rapid.Bool().Draw(t, "field") {
				return pick("s", "t")
			}
			return strconv.Quote(rapid.SampledFrom([]string{"", "a", "b", "AbC"}).Draw(t, "lit"))
		}
		switch rapid.IntRange(0, 2).Draw(t, "form") {
		case 0:
			return "(" + sub(core.String) + " + " + sub(core.String) + ")"
		case 1:
			return pick("lower", "upper") + "(" + sub(core.String) + ")"
		default:
			return "(" + sub(core.Bool) + " ? " + sub(core.String) + " : " + sub(core.String) + ")"
		}
	case core.Bool:
		if leaf {
			if rapid.Bool().Draw(t, "field") {
				return pick("b", "c")
			}
			return pick("true", "false")
		}
		switch rapid.IntRange(0, 8).Draw(t, "form") {
		case 0, 1:
			return "(" + num() + " " + pick("==", "!=", "<", ">", "<=", ">=") + " " + num() + ")"
		case 2:
			return "(" + sub(core.String) + " " + pick("==", "!=", "<", ">=", "contains", "startsWith", "endsWith") + " " + sub(core.String) + ")"
		case 3:
			return "(" + sub(core.Bool) + " " + pick("&&", "||", "==", "!=", "and", "or") + " " + sub(core.Bool) + ")"
		case 4:
			return pick("!", "not ") + "(" + sub(core.Bool) + ")"
		case 5:
			return "(" + sub(core.Int64) + " " + pick("in", "not in") + " [1, -2, 3, 0.5])"
		case 6:
			return "(" + sub(core.String) + " in ['a', '', 'AbC'])"
		case 7:
			return "(" + sub(core.Timestamp) + " " + pick("==", "<", ">=") + " " + sub(core.Timestamp) + ")"
		default:
			return "(" + sub(core.String) + " matches '^[a-z]+$')"
		}
	case core.Timestamp:
		if leaf {
			return pick("ts", "tu")
		}
		return "(" + sub(core.Timestamp) + " " + pick("+", "-") + " duration('" + pick("1h", "-90s", "1ns") + "'))"
	}
	panic(want)
}

func intLit(i int64) string {
	if i < 0 {
		if i == math.MinInt64 {
			return "(-9223372036854775807 - 1)"
		}
		return "(-" + strconv.FormatInt(-i, 10) + ")"
	}
	return strconv.FormatInt(i, 10)
}

func floatLit(f float64) string {
	s := strconv.FormatFloat(math.Abs(f), 'e', -1, 64)
	if f < 0 {
		return "(-" + s + ")"
	}
	return s
}

func sameValue(typ core.Type, a, b core.Value) bool {
	if typ == core.Float64 {
		// == makes 0 and -0 equal: expr-lang's constant pool keeps one of
		// 0.0 and -0.0 (map keys), so the vm may return either sign.
		x, y := a.Float(), b.Float()
		return x == y || math.IsNaN(x) && math.IsNaN(y)
	}
	return core.Compare(typ, a, b) == 0
}

func checkAgree(t *rapid.T, p *Program, row []core.Value) {
	fast, errFast := p.Eval(row)
	slow, errVM := p.evalVM(row)
	if (errFast != nil) != (errVM != nil) {
		t.Fatalf("%q: fast error %v, vm error %v", p.Source(), errFast, errVM)
	}
	if errFast == nil && !sameValue(p.Type(), fast, slow) {
		t.Fatalf("%q on %v: fast %s, vm %s", p.Source(), describe(row),
			core.AppendText(nil, p.Type(), fast), core.AppendText(nil, p.Type(), slow))
	}
}

func describe(row []core.Value) string {
	var b []byte
	for i, f := range propSchema.Fields {
		b = fmt.Appendf(b, "%s=%s ", f.Name, core.AppendText(nil, f.Type, row[i]))
	}
	return string(b)
}

func TestFastMatchesVMFixed(t *testing.T) {
	progs := make([]*Program, len(fixedExprs))
	for k, src := range fixedExprs {
		p, err := Compile(src, propSchema)
		if err != nil {
			t.Fatalf("Compile(%q): %v", src, err)
		}
		if !p.Fast() {
			t.Errorf("%q is not on the fast path", src)
		}
		progs[k] = p
	}
	rapid.Check(t, func(t *rapid.T) {
		row := genRow(t)
		for _, p := range progs {
			checkAgree(t, p, row)
		}
	})
}

func TestFastMatchesVMRandom(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		want := rapid.SampledFrom([]core.Type{core.Int64, core.Float64, core.String, core.Bool, core.Timestamp}).Draw(t, "type")
		src := genExpr(t, want, 4)
		p, err := Compile(src, propSchema)
		if err != nil {
			// Constant folding may fail at compile time (1 % 0).
			t.Skipf("Compile(%q): %v", src, err)
		}
		if !p.Fast() {
			t.Fatalf("%q is not on the fast path", src)
		}
		if hasFloatZero(p) {
			t.Skipf("%q: expr-lang's constant pool merges 0.0 and -0.0", src)
		}
		for range 5 {
			checkAgree(t, p, genRow(t))
		}
	})
}

// TestTimeExtremes: at the ends of the int64 ns range, ts - tu saturates
// like time.Time.Sub, and comparisons are exact.
func TestTimeExtremes(t *testing.T) {
	for _, src := range []string{"tu - ts", "ts - tu", "ts < tu", "ts == tu", "(tu - ts) > duration('1h')"} {
		p, err := Compile(src, propSchema)
		if err != nil || !p.Fast() {
			t.Fatalf("Compile(%q): %v (fast %v)", src, err, p != nil && p.Fast())
		}
		for _, ts := range []int64{math.MinInt64, -1, 0, math.MaxInt64} {
			for _, tu := range []int64{math.MinInt64, 1, math.MaxInt64} {
				row := make([]core.Value, propSchema.Width())
				row[8], row[9] = core.TimeValue(ts), core.TimeValue(tu)
				fast, err1 := p.Eval(row)
				slow, err2 := p.evalVM(row)
				if err1 != nil || err2 != nil || !sameValue(p.Type(), fast, slow) {
					t.Errorf("%q ts=%d tu=%d: fast %v %v, vm %v %v", src, ts, tu, fast, err1, slow, err2)
				}
			}
		}
	}
}

// hasFloatZero reports whether the vm program has a float zero constant:
// expr-lang's compiler keys its constant pool by value, so 0.0 and -0.0
// (equal as map keys) share one slot and the vm may use the wrong sign,
// e.g. -(1.5 - 1.5) < 0.0 ** -1 is true in Go and false on the vm.
func hasFloatZero(p *Program) bool {
	for _, c := range p.vmProg.Constants {
		if f, ok := c.(float64); ok && f == 0 {
			return true
		}
	}
	return false
}
