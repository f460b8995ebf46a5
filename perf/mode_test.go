package perf

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// The mode line says what load ran: Options.Rate for the generator
// workloads, elastic's rate steps (with its defaults), and ring refuses a
// rate it could not honour.
func TestMode(t *testing.T) {
	for _, c := range []struct {
		workload string
		opt      Options
		want     string
	}{
		{"pipeline", Options{}, "closed loop"},
		{"pipeline", Options{Rate: 250_000}, "open loop at 250000 records/s"},
		{"ring", Options{Duration: time.Second}, "closed loop"},
		{"elastic", Options{Duration: 3 * time.Second, Rate: 1000}, "open loop, steps 1000 → 4000 → 1000 records/s at 0s, 1s, 2s"},
		{"elastic", Options{Duration: 5 * time.Second, Rate: 20_000}, "open loop, steps 20000 → 80000 → 20000 records/s at 0s, 1.667s, 3.333s"},
		// Without --rate or --duration, elastic still runs open loop: R = 500,000 over 6 s.
		{"elastic", Options{}, "open loop, steps 500000 → 2000000 → 500000 records/s at 0s, 2s, 4s"},
	} {
		w, err := Lookup(c.workload)
		if err != nil {
			t.Fatal(err)
		}
		if got := w.mode(c.opt); got != c.want {
			t.Errorf("%s %+v: mode %q, want %q", c.workload, c.opt, got, c.want)
		}
	}
}

func TestModeLine(t *testing.T) {
	var b bytes.Buffer
	r := &Result{Workload: "elastic", Mode: "open loop, steps 1000 → 4000 → 1000 records/s at 0s, 1s, 2s",
		Options: Options{Rate: 1000}, TimeUp: true}
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if want := "mode                open loop, steps 1000 → 4000 → 1000 records/s at 0s, 1s, 2s (stopped by time)\n"; !strings.Contains(b.String(), want) {
		t.Fatalf("table lacks %q:\n%s", want, b.String())
	}
	// Stopped by a signal, not by --duration.
	b.Reset()
	r.TimeUp, r.Interrupted = false, true
	r.WriteTable(&b)
	if want := "records/s at 0s, 1s, 2s (interrupted)\n"; !strings.Contains(b.String(), want) {
		t.Fatalf("table lacks %q:\n%s", want, b.String())
	}
	// A result from before Mode (an old report.json) falls back to the rate.
	b.Reset()
	r = &Result{Workload: "pipeline", Options: Options{Rate: 1000}}
	r.WriteTable(&b)
	if want := "mode                open loop at 1000 records/s (source ended)\n"; !strings.Contains(b.String(), want) {
		t.Fatalf("table lacks %q:\n%s", want, b.String())
	}
}

func TestRingRefusesRate(t *testing.T) {
	w, err := Lookup("ring")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(w, Options{Rate: 1000, Count: 1000})
	want := "the ring workload has no rate: it runs closed loop, as fast as it goes; run it without --rate"
	if res != nil || err == nil || err.Error() != want {
		t.Fatalf("ring with a rate: result %v, error %v; want %q", res, err, want)
	}
	// elastic takes a rate (its base rate).
	w, _ = Lookup("elastic")
	if err := w.Check(Options{Rate: 1000}); err != nil {
		t.Fatalf("elastic refused a rate: %v", err)
	}
}
