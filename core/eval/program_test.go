package eval

import (
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"streamd/core"
)

var flights = core.MustSchema(
	core.Field{Name: "carrier", Type: core.String},
	core.Field{Name: "origin", Type: core.String},
	core.Field{Name: "delay", Type: core.Int64},
	core.Field{Name: "distance", Type: core.Float64},
	core.Field{Name: "cancelled", Type: core.Bool},
	core.Field{Name: "dep", Type: core.Timestamp},
	core.Field{Name: "arr", Type: core.Timestamp},
)

func flightRow(carrier, origin string, delay int64, distance float64, cancelled bool, dep, arr string) []core.Value {
	d, err := core.ParseTime(dep)
	if err != nil {
		panic(err)
	}
	a, err := core.ParseTime(arr)
	if err != nil {
		panic(err)
	}
	return []core.Value{core.StringValue(carrier), core.StringValue(origin), core.IntValue(delay),
		core.FloatValue(distance), core.BoolValue(cancelled), core.TimeValue(d), core.TimeValue(a)}
}

func mustCompile(t testing.TB, src string) *Program {
	t.Helper()
	p, err := Compile(src, flights)
	if err != nil {
		t.Fatalf("Compile(%q): %v", src, err)
	}
	return p
}

func TestEvalValues(t *testing.T) {
	row := flightRow("AA", "ORD", 17, 733.5, false, "2024-03-01T10:00:00Z", "2024-03-01T12:30:00Z")
	tests := []struct {
		src  string
		fast bool
		want core.Value
		typ  core.Type
	}{
		{"delay > 15", true, core.BoolValue(true), core.Bool},
		{"delay > 17", true, core.BoolValue(false), core.Bool},
		{"15 < delay", true, core.BoolValue(true), core.Bool},
		{"distance * 2 + delay", true, core.FloatValue(733.5*2 + 17), core.Float64},
		{"delay * 2 - 4", true, core.IntValue(30), core.Int64},
		{"delay / 2", true, core.FloatValue(8.5), core.Float64},
		{"delay % 5", true, core.IntValue(2), core.Int64},
		{"-delay", true, core.IntValue(-17), core.Int64},
		{"2 ** 10", true, core.FloatValue(1024), core.Float64},
		{"origin == \"ORD\" && !cancelled", true, core.BoolValue(true), core.Bool},
		{"origin != 'ORD' || cancelled", true, core.BoolValue(false), core.Bool},
		{"origin in ['JFK', 'ORD']", true, core.BoolValue(true), core.Bool},
		{"origin not in ['JFK', 'ORD']", true, core.BoolValue(false), core.Bool},
		{"delay in [1, 2, 17]", true, core.BoolValue(true), core.Bool},
		{"carrier < origin", true, core.BoolValue(true), core.Bool},
		{"carrier + '-' + origin", true, core.StringValue("AA-ORD"), core.String},
		{"lower(origin)", true, core.StringValue("ord"), core.String},
		{"len(origin) + abs(-3)", true, core.IntValue(6), core.Int64},
		{"delay > 15 ? 'late' : 'ok'", true, core.StringValue("late"), core.String},
		{"delay > 15 ? delay : 0.5", true, core.FloatValue(17), core.Float64},
		{"(delay + 1) * 2", true, core.IntValue(36), core.Int64},
		{"arr > dep", true, core.BoolValue(true), core.Bool},
		{"arr - dep", true, core.IntValue(int64(150 * time.Minute)), core.Int64},
		{"arr - dep > duration('2h')", true, core.BoolValue(true), core.Bool},
		{"dep + duration('1h')", true, core.TimeValue(row[5].Time() + int64(time.Hour)), core.Timestamp},
		{"dep + duration('1m') * delay", true, core.TimeValue(row[5].Time() + row[2].Int()*int64(time.Minute)), core.Timestamp},
		{"dep", true, row[5], core.Timestamp},
		{"origin startsWith 'O' and origin matches '^[A-Z]{3}$'", true, core.BoolValue(true), core.Bool},
		{"round(distance)", true, core.FloatValue(734), core.Float64},
		// Outside the fast subset: expr-lang's vm.
		{"dep.Hour() == 10", false, core.BoolValue(true), core.Bool},
		{"let d = delay * 2; d + 1", false, core.IntValue(35), core.Int64},
		{"max(delay, 20)", false, core.IntValue(20), core.Int64},
		{"split(carrier + ',' + origin, ',')[1]", false, core.StringValue("ORD"), core.String},
	}
	for _, tt := range tests {
		p := mustCompile(t, tt.src)
		if p.Fast() != tt.fast {
			t.Errorf("%q: Fast() = %v, want %v", tt.src, p.Fast(), tt.fast)
		}
		if p.Type() != tt.typ {
			t.Errorf("%q: Type() = %s, want %s", tt.src, p.Type(), tt.typ)
		}
		got, err := p.Eval(row)
		if err != nil {
			t.Errorf("%q: %v", tt.src, err)
			continue
		}
		if core.Compare(tt.typ, got, tt.want) != 0 {
			t.Errorf("%q = %s, want %s", tt.src, core.AppendText(nil, tt.typ, got), core.AppendText(nil, tt.typ, tt.want))
		}
		vmGot, err := p.evalVM(row)
		if err != nil || core.Compare(tt.typ, vmGot, tt.want) != 0 {
			t.Errorf("%q on the vm = %s, %v; want %s", tt.src, core.AppendText(nil, tt.typ, vmGot), err, core.AppendText(nil, tt.typ, tt.want))
		}
	}
}

func TestEvalTyped(t *testing.T) {
	row := flightRow("AA", "ORD", 17, 733.5, false, "2024-03-01T10:00:00Z", "2024-03-01T12:30:00Z")
	if ok, err := mustCompile(t, "delay > 15").EvalBool(row); err != nil || !ok {
		t.Errorf("EvalBool = %v, %v", ok, err)
	}
	if i, err := mustCompile(t, "delay + 1").EvalInt(row); err != nil || i != 18 {
		t.Errorf("EvalInt = %v, %v", i, err)
	}
	if f, err := mustCompile(t, "delay + 1").EvalFloat(row); err != nil || f != 18 {
		t.Errorf("EvalFloat(int) = %v, %v", f, err)
	}
	if f, err := mustCompile(t, "distance / 2").EvalFloat(row); err != nil || f != 366.75 {
		t.Errorf("EvalFloat = %v, %v", f, err)
	}
	if _, err := mustCompile(t, "delay + 1").EvalBool(row); !errors.Is(err, ErrType) {
		t.Errorf("EvalBool of an int expression: err = %v, want ErrType", err)
	}
	if _, err := mustCompile(t, "origin").EvalInt(row); !errors.Is(err, ErrType) {
		t.Errorf("EvalInt of a string expression: err = %v, want ErrType", err)
	}
}

func TestDivisionByZero(t *testing.T) {
	zero := flightRow("AA", "ORD", 0, 1, false, "2024-03-01", "2024-03-01")
	for _, src := range []string{"10 % delay", "delay > 0 || 10 % delay == 1", "let z = delay; 10 % z"} {
		p := mustCompile(t, src)
		_, err := p.Eval(zero)
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrDivisionByZero) {
			t.Fatalf("%q (fast %v): err = %v, want *Error wrapping ErrDivisionByZero", src, p.Fast(), err)
		}
		if want := strings.Index(src, "%") + 1; e.Line != 1 || e.Column != want {
			t.Errorf("%q: position %d:%d, want 1:%d", src, e.Line, e.Column, want)
		}
	}
	// Float division by zero is IEEE, as in expr.
	v, err := mustCompile(t, "1 / delay").Eval(zero)
	if err != nil || !math.IsInf(v.Float(), 1) {
		t.Errorf("1 / 0 = %v, %v; want +Inf", v.Float(), err)
	}
	// A short-circuited operand is not evaluated.
	if ok, err := mustCompile(t, "delay == 0 || 10 % delay == 1").EvalBool(zero); err != nil || !ok {
		t.Errorf("short circuit: %v, %v", ok, err)
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		src          string
		line, column int
		msg          string
	}{
		{"dealy > 15", 1, 1, `unknown field "dealy" (fields: carrier, origin, delay, distance, cancelled, dep, arr); did you mean "delay"?`},
		{"delay > 15 &&\n  orign == 'ORD'", 2, 3, `unknown field "orign"`},
		{"delay > 'x'", 1, 7, "invalid operation: > (mismatched types int and string)"},
		{"delay >", 1, 7, "unexpected token EOF"},
		{"delay > 15 )", 1, 12, "unexpected token"},
		{"frobnicate(delay)", 1, 1, `unknown function "frobnicate"`},
		{"[delay, 1]", 1, 1, "it must be int64, float64, string, bool or timestamp"},
		{"cancelled ? 1 : 'x'", 1, 17, "the branches of ?: are int64 and string"},
		{"'é' + dealy", 1, 7, `unknown field "dealy"`},
	}
	for _, tt := range tests {
		_, err := Compile(tt.src, flights)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Compile(%q): err = %v (%T), want *Error", tt.src, err, err)
			continue
		}
		if e.Line != tt.line || e.Column != tt.column || !strings.Contains(e.Msg, tt.msg) {
			t.Errorf("Compile(%q) = %d:%d %q; want %d:%d containing %q", tt.src, e.Line, e.Column, e.Msg, tt.line, tt.column, tt.msg)
		}
	}
}

func TestErrorSnippet(t *testing.T) {
	_, err := Compile("delay > 15 &&\n  orign == 'ORD'", flights)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatal(err)
	}
	if got, want := e.Snippet(), "  orign == 'ORD'\n  ^"; got != want {
		t.Errorf("Snippet() = %q, want %q", got, want)
	}
	if e.Offset != strings.Index(e.Src, "orign") {
		t.Errorf("Offset = %d", e.Offset)
	}
}

func TestConcurrentEval(t *testing.T) {
	fast, slow := mustCompile(t, "delay * 2"), mustCompile(t, "let d = delay * 2; d")
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				row := flightRow("AA", "ORD", int64(g*1000+i), 1, false, "2024-03-01", "2024-03-01")
				a, err1 := fast.Eval(row)
				b, err2 := slow.Eval(row)
				if err1 != nil || err2 != nil || a.Int() != b.Int() || a.Int() != int64(2*(g*1000+i)) {
					t.Errorf("goroutine %d row %d: %d %d %v %v", g, i, a.Int(), b.Int(), err1, err2)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestFastPathDoesNotAllocate(t *testing.T) {
	row := flightRow("AA", "ORD", 17, 733.5, false, "2024-03-01T10:00:00Z", "2024-03-01T12:30:00Z")
	for _, src := range []string{"delay > 15", "distance * 2 + delay", "origin in ['JFK', 'ORD'] && arr - dep > duration('1h')", "delay % 5"} {
		p := mustCompile(t, src)
		if n := testing.AllocsPerRun(100, func() { p.Eval(row) }); n != 0 {
			t.Errorf("%q: %v allocs per Eval", src, n)
		}
	}
}
