package main

import (
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"streamd/perf"
)

func TestBenchList(t *testing.T) {
	code, out, errOut := cli(t, "bench", "--list")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, n := range []string{"ring", "pipeline", "flights", "keyed", "elastic"} {
		if !strings.Contains(out, n+" ") {
			t.Fatalf("--list lacks %s:\n%s", n, out)
		}
	}
}

func TestBenchPipeline(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	prof := filepath.Join(t.TempDir(), "cpu.pprof")
	code, out, errOut := cli(t, "bench", "pipeline", "--count", "100000", "--seed", "7", "--out", dir, "--cpuprofile", prof)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, s := range []string{"records in / out", "100000 / 100000", "records/s per core", "p99.99"} {
		if !strings.Contains(out, s) {
			t.Fatalf("table lacks %q:\n%s", s, out)
		}
	}
	r := readReport(t, dir)
	if r.RecordsIn != 100000 || r.Latency.Count != 100000 || r.Options.Seed != 7 {
		t.Fatalf("report: %d in, %d latencies, seed %d", r.RecordsIn, r.Latency.Count, r.Options.Seed)
	}
	hgrm, err := os.ReadFile(filepath.Join(dir, perf.HgrmFile))
	if err != nil || !strings.HasPrefix(string(hgrm), " Value\tPercentile\tTotalCount\t1/(1-Percentile)") {
		t.Fatalf("hgrm: %v %.80q", err, hgrm)
	}
	for _, p := range []string{perf.LatencyPlot, perf.ThroughputPlot} {
		f, err := os.Open(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		_, err = png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	if st, err := os.Stat(prof); err != nil || st.Size() == 0 {
		t.Fatalf("cpu profile: %v", err)
	}
}

func TestBenchUsage(t *testing.T) {
	for _, args := range [][]string{{"bench"}, {"bench", "nope"}, {"bench", "pipeline", "--count", "-1"}} {
		if code, _, _ := cli(t, args...); code != 2 {
			t.Fatalf("%v: exit %d, want 2", args, code)
		}
	}
	// The workloads are listed by name, comma-separated.
	names := strings.Join(perf.Names(), ", ")
	for _, c := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"bench"}, "streamd: bench: expected a workload, one of " + names + " (streamd bench WORKLOAD; streamd bench --list says what each runs)\n"},
		{[]string{"bench", "a", "b"}, "streamd: bench: expected a workload, one of " + names + " (streamd bench WORKLOAD; streamd bench --list says what each runs), not 2 arguments\n"},
		{[]string{"bench", "nope"}, "streamd: bench: no workload \"nope\" (have: " + names + ")\n"},
	} {
		if code, _, stderr := cli(t, c.args...); code != 2 || stderr != c.stderr || !strings.Contains(stderr, "elastic, flights") {
			t.Errorf("streamd %s: exit %d, stderr %q; want 2, %q", strings.Join(c.args, " "), code, stderr, c.stderr)
		}
	}
}

// ring is a closed-loop transfer benchmark: --rate is refused (exit 2)
// before anything is written, rather than reported as an open loop that
// did not run.
func TestBenchRingRate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	prof := filepath.Join(t.TempDir(), "cpu.pprof")
	code, out, errOut := cli(t, "bench", "ring", "--rate", "1000", "--count", "1000", "--out", dir, "--cpuprofile", prof)
	want := "streamd: the ring workload has no rate: it runs closed loop, as fast as it goes; run it without --rate\n"
	if code != 2 || out != "" || errOut != want {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 2, %q", code, out, errOut, want)
	}
	for _, p := range []string{dir, prof} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s made by a refused run (%v)", p, err)
		}
	}
}

// elastic's mode line gives its rate steps, not "open loop at R".
func TestBenchElasticMode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	code, out, errOut := cli(t, "bench", "elastic", "--rate", "20000", "--duration", "600ms", "--unpinned", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	mode := "open loop, steps 20000 → 80000 → 20000 records/s at 0s, 200ms, 400ms"
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "mode ") {
			line = strings.Join(strings.Fields(l), " ")
		}
	}
	if want := "mode " + mode + " (stopped by time)"; line != want {
		t.Fatalf("mode line %q, want %q:\n%s", line, want, out)
	}
	// Stopped by --duration: out of time, not interrupted (Ctrl-C).
	r := readReport(t, dir)
	if r.Mode != mode || r.Options.Rate != 20000 || !r.TimeUp || r.Interrupted {
		t.Fatalf("report: mode %q, rate %g, time up %v, interrupted %v", r.Mode, r.Options.Rate, r.TimeUp, r.Interrupted)
	}
}

// readReport reads the report.json a bench run wrote into dir.
func readReport(t *testing.T, dir string) perf.Result {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, perf.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	var r perf.Result
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return r
}
