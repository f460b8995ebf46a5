package ops

import (
	"errors"
	"strings"
	"testing"

	"streamd/core"
	"streamd/core/eval"
)

func TestMapKeepInput(t *testing.T) {
	def, err := Map("m", []MapField{
		{Name: "delay", Expr: "delay > 0 ? delay : 0"}, // replaces delay in place
		{Name: "km", Expr: "distance * 1.609344"},
		{Name: "route", Expr: "carrier + ':' + origin"},
		{Name: "late", Expr: "delay > 15"},
	}, true, flights, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := def.Out.String(), "(carrier string, origin string, delay int64, distance float64, km float64, route string, late bool)"; got != want {
		t.Fatalf("schema %s, want %s", got, want)
	}
	out, err := run(t, def, core.Env{}, flightBatch(someFlights))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(someFlights) {
		t.Fatalf("%d records, want %d", len(out), len(someFlights))
	}
	for i, r := range out {
		f := someFlights[i]
		checkMeta(t, r, i)
		if r.vals[0].Str() != f.carrier || r.vals[1].Str() != f.origin || r.vals[3].Float() != f.distance {
			t.Errorf("record %d: input fields changed: %v", i, r.vals)
		}
		if want := max(f.delay, 0); r.vals[2].Int() != want {
			t.Errorf("record %d: delay = %d, want %d", i, r.vals[2].Int(), want)
		}
		if want := f.distance * 1.609344; r.vals[4].Float() != want {
			t.Errorf("record %d: km = %v, want %v", i, r.vals[4].Float(), want)
		}
		if want := f.carrier + ":" + f.origin; r.vals[5].Str() != want {
			t.Errorf("record %d: route = %q, want %q", i, r.vals[5].Str(), want)
		}
		if want := f.delay > 15; r.vals[6].Bool() != want {
			t.Errorf("record %d: late = %v, want %v", i, r.vals[6].Bool(), want)
		}
	}
}

func TestMapNewFieldsOnly(t *testing.T) {
	def, err := Map("m", []MapField{{Name: "origin", Expr: "lower(origin)"}, {Name: "d2", Expr: "delay * 2"}}, false, flights, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := def.Out.String(), "(origin string, d2 int64)"; got != want {
		t.Fatalf("schema %s, want %s", got, want)
	}
	out, err := run(t, def, core.Env{}, flightBatch(someFlights[:3]))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range out {
		checkMeta(t, r, i)
		if r.vals[0].Str() != strings.ToLower(someFlights[i].origin) || r.vals[1].Int() != 2*someFlights[i].delay {
			t.Errorf("record %d = %v", i, r.vals)
		}
	}
}

func TestMapErrors(t *testing.T) {
	if _, err := Map("m", []MapField{{Name: "x", Expr: "delay +"}}, true, flights, nil); err == nil || !strings.Contains(err.Error(), `field "x"`) {
		t.Errorf("syntax error: %v", err)
	} else if ee := (*eval.Error)(nil); !errors.As(err, &ee) {
		t.Errorf("syntax error is not an *eval.Error: %v", err)
	}
	if _, err := Map("m", []MapField{{Name: "x", Expr: "1"}, {Name: "x", Expr: "2"}}, true, flights, nil); err == nil {
		t.Error("duplicate field accepted")
	}
	p, _ := policyFor(t, core.Skip)
	def, err := Map("m", []MapField{{Name: "r", Expr: "100 % delay"}}, true, flights, p)
	if err != nil {
		t.Fatal(err)
	}
	out, err := run(t, def, core.Env{}, flightBatch(someFlights))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(someFlights)-1 || p.Skipped.Load() != 1 {
		t.Errorf("%d records out, %d skipped; want %d and 1", len(out), p.Skipped.Load(), len(someFlights)-1)
	}
	_, err = run(t, def, core.Env{}, flightBatch(someFlights))
	if err != nil {
		t.Fatal(err) // skip policy: still no error
	}
	failDef, _ := Map("m", []MapField{{Name: "r", Expr: "100 % delay"}}, true, flights, nil)
	if _, err := run(t, failDef, core.Env{}, flightBatch(someFlights)); !errors.Is(err, eval.ErrDivisionByZero) || !strings.Contains(err.Error(), `field "r"`) {
		t.Errorf("fail policy: err = %v", err)
	}
}

func TestProject(t *testing.T) {
	def, err := Project("p", []string{"origin as airport", "delay", "carrier"}, flights)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := def.Out.String(), "(airport string, delay int64, carrier string)"; got != want {
		t.Fatalf("schema %s, want %s", got, want)
	}
	out, err := run(t, def, core.Env{}, flightBatch(someFlights))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range out {
		checkMeta(t, r, i)
		f := someFlights[i]
		if r.vals[0].Str() != f.origin || r.vals[1].Int() != f.delay || r.vals[2].Str() != f.carrier {
			t.Errorf("record %d = %v", i, r.vals)
		}
	}
	for _, bad := range [][]string{{"dealy"}, {"origin as"}, {"origin", "carrier as origin"}, {}} {
		if _, err := Project("p", bad, flights); err == nil {
			t.Errorf("Project(%q) accepted", bad)
		}
	}
	if _, err := Project("p", []string{"dealy"}, flights); err == nil || !strings.Contains(err.Error(), "fields: carrier, origin, delay, distance") {
		t.Errorf("unknown column error does not list the fields: %v", err)
	}
}

// Map uses the programs it is given (MapField.Program), in every
// instance, and compiles only the fields that come without one.
func TestMapUsesGivenPrograms(t *testing.T) {
	p, err := eval.Compile("delay * 2", flights)
	if err != nil {
		t.Fatal(err)
	}
	def, err := Map("m", []MapField{{Name: "d2", Expr: "delay * 2", Program: p}, {Name: "d3", Expr: "delay * 3"}}, true, flights, nil)
	if err != nil {
		t.Fatal(err)
	}
	var compiled *eval.Program
	for c := range 3 {
		op, err := def.New(core.Env{Channel: c, Channels: 3})
		if err != nil {
			t.Fatal(err)
		}
		progs := op.(*mapper).progs
		if progs[0] != p {
			t.Errorf("channel %d evaluates d2 with %p, want the program given, %p", c, progs[0], p)
		}
		if compiled == nil {
			compiled = progs[1]
		} else if progs[1] != compiled {
			t.Errorf("channel %d has its own compiled d3 program", c)
		}
	}
	other := core.MustSchema(core.Field{Name: "delay", Type: core.Int64})
	q, _ := eval.Compile("delay", other)
	if _, err := Map("m", []MapField{{Name: "x", Expr: "delay", Program: q}}, true, flights, nil); err == nil {
		t.Error("a program compiled against another schema was accepted")
	}
}
