package ops

import (
	"errors"
	"strings"
	"testing"

	"streamd/core"
	"streamd/core/eval"
)

func TestFilterKeepsMatchingRecordsInPlace(t *testing.T) {
	def, err := Filter("late", "delay > 15 && origin != 'XXX'", flights, nil)
	if err != nil {
		t.Fatal(err)
	}
	if def.Out != flights {
		t.Errorf("Filter's output schema is %s, want its input's", def.Out)
	}
	in := flightBatch(someFlights)
	op, _ := def.New(core.Env{})
	var got *core.Batch
	out := core.NewEmitter(def.Out, func(b *core.Batch) error { got = b; return nil }, nil)
	if err := op.Process(in, out); err != nil {
		t.Fatal(err)
	}
	if got != in {
		t.Fatalf("Filter emitted %p, want the input batch %p (no copy)", got, in)
	}
	want := []int{0, 2, 4} // ORD 17, SFO 45, DBN 16
	if got.Len != len(want) {
		t.Fatalf("kept %d records, want %d", got.Len, len(want))
	}
	for k, i := range want {
		row := got.Row(k)
		if row[1].Str() != someFlights[i].origin || row[2].Int() != someFlights[i].delay {
			t.Errorf("record %d = %s/%d, want %s/%d", k, row[1].Str(), row[2].Int(), someFlights[i].origin, someFlights[i].delay)
		}
		if m := (meta{got.Seq[k], got.Hash[k], got.Time[k], got.Pos[k]}); m != metaOf(i) {
			t.Errorf("record %d metadata %+v, want %+v", k, m, metaOf(i))
		}
	}
	if len(got.Vals) != got.Len*flights.Width() {
		t.Errorf("Vals has %d values for %d records", len(got.Vals), got.Len)
	}
	got.Release()
}

func TestFilterInChain(t *testing.T) {
	def, err := Filter("f", "distance >= 1000", flights, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := run(t, def, core.Env{}, flightBatch(someFlights), flightBatch(someFlights[:2]))
	if err != nil {
		t.Fatal(err)
	}
	var origins []string
	for _, r := range out {
		origins = append(origins, r.vals[1].Str())
	}
	if got := strings.Join(origins, ","); got != "ATL,SFO,JFK,ATL" {
		t.Errorf("kept %s", got)
	}
	checkMeta(t, out[1], 2)
}

func TestFilterRuntimeErrors(t *testing.T) {
	// delay is 0 for JFK: 100 % 0 is an error.
	cond := "100 % delay > 1"
	t.Run("skip", func(t *testing.T) {
		p, _ := policyFor(t, core.Skip)
		def, err := Filter("f", cond, flights, p)
		if err != nil {
			t.Fatal(err)
		}
		out, err := run(t, def, core.Env{}, flightBatch(someFlights))
		if err != nil {
			t.Fatal(err)
		}
		if p.Skipped.Load() != 1 {
			t.Errorf("Skipped = %d, want 1", p.Skipped.Load())
		}
		for _, r := range out {
			if r.vals[1].Str() == "JFK" {
				t.Error("the record that failed was kept")
			}
		}
	})
	t.Run("fail", func(t *testing.T) {
		def, err := Filter("f", cond, flights, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The policy comes from the instance's environment.
		p, _ := policyFor(t, core.Fail)
		_, err = run(t, def, core.Env{Errors: p}, flightBatch(someFlights))
		var re *core.RecordError
		if !errors.As(err, &re) || re.Pos != metaOf(3).Pos || !errors.Is(err, eval.ErrDivisionByZero) {
			t.Fatalf("err = %v, want a RecordError at pos %d wrapping ErrDivisionByZero", err, metaOf(3).Pos)
		}
	})
	t.Run("dead_letter", func(t *testing.T) {
		p, path := policyFor(t, core.DeadLetter)
		def, _ := Filter("f", cond, flights, p)
		if _, err := run(t, def, core.Env{}, flightBatch(someFlights)); err != nil {
			t.Fatal(err)
		}
		p.Close()
		got := readFile(t, path)
		if !strings.Contains(got, `"record":"carrier=AA origin=JFK delay=0 distance=2475"`) || !strings.Contains(got, "integer divide by zero") {
			t.Errorf("dead letter file: %s", got)
		}
	})
}

func TestFilterConstructorErrors(t *testing.T) {
	_, err := Filter("f", "dealy > 15", flights, nil)
	var ee *eval.Error
	if !errors.As(err, &ee) || ee.Column != 1 || !strings.Contains(err.Error(), `unknown field "dealy"`) {
		t.Errorf("unknown field: %v", err)
	}
	if _, err := Filter("f", "delay + 1", flights, nil); err == nil || !strings.Contains(err.Error(), "not bool") {
		t.Errorf("non-bool condition: %v", err)
	}
}

// FilterProgram uses the program it is given, in every instance: the
// loader compiles a condition once, to report errors, and passes it on.
func TestFilterProgramSharesTheProgram(t *testing.T) {
	p, err := eval.Compile("delay > 15", flights)
	if err != nil {
		t.Fatal(err)
	}
	def, err := FilterProgram("f", p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if def.Out != flights {
		t.Errorf("output schema %s, want the program's", def.Out)
	}
	for c := range 3 {
		op, err := def.New(core.Env{Channel: c, Channels: 3})
		if err != nil {
			t.Fatal(err)
		}
		if got := op.(*filter).p; got != p {
			t.Errorf("channel %d evaluates program %p, want the one given, %p", c, got, p)
		}
	}
	notBool, _ := eval.Compile("delay + 1", flights)
	if _, err := FilterProgram("f", notBool, nil); err == nil || err.Error() != `filter f: condition "delay + 1" is int64, not bool` {
		t.Errorf("a non-bool program: %v", err)
	}
}
