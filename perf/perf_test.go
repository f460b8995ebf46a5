package perf

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// run runs a workload and checks what every report must satisfy.
// timed runs workload name for opt.Duration, doubling the duration (up to
// 4 times) while the run moved nothing: what a timed run must show is that
// it ends on time with a sound result, and a loaded machine may start it
// slower than any fixed duration (no test depends on a quiet machine).
func timed(t *testing.T, name string, opt Options, moved func(*Result) bool) *Result {
	t.Helper()
	for try := 0; ; try++ {
		res := run(t, name, opt)
		if moved(res) || try == 4 {
			return res
		}
		opt.Duration *= 2
	}
}

func run(t *testing.T, name string, opt Options) *Result {
	t.Helper()
	w, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(w, opt)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res)
	return res
}

func checkResult(t *testing.T, res *Result) {
	t.Helper()
	l := res.Latency
	if l.Count > 0 {
		ps := []int64{l.P50, l.P90, l.P99, l.P999, l.P9999, l.Max}
		for i := 1; i < len(ps); i++ {
			if ps[i] < ps[i-1] {
				t.Fatalf("percentiles decrease: %v", ps)
			}
		}
		if l.P50 < 1 {
			t.Fatalf("p50 %d µs < 1", l.P50)
		}
	}
	if res.WallSeconds <= 0 || res.CPUSeconds <= 0 || res.RecordsIn <= 0 {
		t.Fatalf("wall %g s, cpu %g s, %d records in", res.WallSeconds, res.CPUSeconds, res.RecordsIn)
	}
	if len(res.Throughput) == 0 {
		t.Fatal("no throughput samples")
	}
	for i := 1; i < len(res.Throughput); i++ {
		if res.Throughput[i].Records < res.Throughput[i-1].Records || res.Throughput[i].T < res.Throughput[i-1].T {
			t.Fatalf("throughput series goes back at %d: %+v", i, res.Throughput)
		}
	}
	m := res.Machine
	if m.NumCPU < 1 || m.Cores < 1 || m.GOMAXPROCS < 1 || m.GoVersion == "" {
		t.Fatalf("machine %+v", m)
	}

	dir := t.TempDir()
	if err := res.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	if back.RecordsIn != res.RecordsIn || back.Latency != res.Latency || len(back.Throughput) != len(res.Throughput) {
		t.Fatalf("report.json does not round-trip: %+v", back)
	}
	checkHgrm(t, filepath.Join(dir, HgrmFile), l.Count)
	for _, p := range []string{LatencyPlot, ThroughputPlot} {
		f, err := os.Open(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
			t.Fatalf("%s: %v", p, b)
		}
	}
	var table bytes.Buffer
	if err := res.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"records/s per core", "latency (µs)", res.Workload} {
		if !strings.Contains(table.String(), s) {
			t.Fatalf("table lacks %q:\n%s", s, table.String())
		}
	}
}

// checkHgrm checks HdrHistogram's percentile format: the header, rows of
// value, percentile, total count, 1/(1-p) with non-decreasing values and
// counts, and a footer with the total count.
func checkHgrm(t *testing.T, path string, count int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan()
	if h := strings.Fields(sc.Text()); strings.Join(h, " ") != "Value Percentile TotalCount 1/(1-Percentile)" {
		t.Fatalf("hgrm header %q", sc.Text())
	}
	rows, footer := 0, false
	var lastV, lastP float64
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
		case strings.HasPrefix(line, "#"):
			footer = true
		default:
			var v, p float64
			var c int64
			var invs string
			if _, err := fmt.Sscan(line, &v, &p, &c, &invs); err != nil {
				t.Fatalf("hgrm row %q: %v", line, err)
			}
			if v < lastV || p < lastP || p > 1 || c > count {
				t.Fatalf("hgrm row %q after value %g percentile %g", line, lastV, lastP)
			}
			lastV, lastP = v, p
			rows++
		}
	}
	if !footer || (count > 0 && rows < 2) {
		t.Fatalf("hgrm: %d rows, footer %v", rows, footer)
	}
}

func TestPipelineCount(t *testing.T) {
	res := run(t, "pipeline", Options{Count: 100_000, Seed: 1, Duration: 20 * time.Second})
	if res.RecordsIn != 100_000 || res.RecordsOut != 100_000 || res.Latency.Count != 100_000 || res.Interrupted {
		t.Fatalf("%d in, %d out, %d latencies, interrupted %v; want 100000", res.RecordsIn, res.RecordsOut, res.Latency.Count, res.Interrupted)
	}
}

func TestPipelineRegion(t *testing.T) {
	res := run(t, "pipeline", Options{Count: 50_000, Channels: 2, Duration: 20 * time.Second})
	if res.RecordsIn != 50_000 || res.RecordsOut != 50_000 {
		t.Fatalf("%d in, %d out", res.RecordsIn, res.RecordsOut)
	}
}

// TestPipelineOpenLoopTimed: open loop, unbounded, stopped by Duration.
func TestPipelineOpenLoopTimed(t *testing.T) {
	res := run(t, "pipeline", Options{Rate: 200_000, Duration: 400 * time.Millisecond})
	if res.Interrupted || !res.TimeUp {
		t.Fatalf("a timed run of an unbounded source should end by time: interrupted %v, time up %v", res.Interrupted, res.TimeUp)
	}
	// About 80,000 records are due in 400 ms: the schedule bounds them; a
	// slow or loaded machine may take fewer.
	if res.RecordsIn == 0 || res.RecordsIn > 90_000 {
		t.Fatalf("%d records in 400 ms at 200,000/s", res.RecordsIn)
	}
	if len(res.Throughput) < 2 {
		t.Fatalf("%d samples in 400 ms", len(res.Throughput))
	}
}

func TestKeyed(t *testing.T) {
	res := run(t, "keyed", Options{Count: 200_000, Seed: 3, Duration: 20 * time.Second})
	if res.RecordsIn != 200_000 || res.RecordsOut == 0 || res.RecordsOut >= res.RecordsIn {
		t.Fatalf("%d in, %d out", res.RecordsIn, res.RecordsOut)
	}
}

func TestRing(t *testing.T) {
	const n = 1000 * ringStampGap
	res := run(t, "ring", Options{Count: n})
	if res.RecordsIn != 2*n {
		t.Fatalf("%d transfers, want 2 × %d", res.RecordsIn, n)
	}
	if res.Latency.Count != n/ringStampGap {
		t.Fatalf("%d latency samples, want %d", res.Latency.Count, n/ringStampGap)
	}
	for _, k := range []string{"ring_transfers_per_s", "chan_transfers_per_s", "ring_vs_chan_speedup"} {
		if res.Extra[k] <= 0 {
			t.Fatalf("%s = %g", k, res.Extra[k])
		}
	}
	// Timed: each half stops on time (one that did not would run without
	// end, until go test's -timeout; no wall-clock bound is asserted).
	res = timed(t, "ring", Options{Duration: 300 * time.Millisecond}, func(r *Result) bool { return r.RecordsIn > 0 })
	if res.RecordsIn == 0 {
		t.Fatal("a 300 ms ring run moved nothing")
	}
}

func dataDir(t *testing.T) string {
	if d := os.Getenv("STREAMD_DATA"); d != "" {
		return d
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(root, "..", "shared", "data")
	if _, err := os.Stat(filepath.Join(d, "flights-3m.parquet")); err != nil {
		t.Skip("no flights data (scripts/fetch-data.sh, or set STREAMD_DATA)")
	}
	return d
}

func TestFlights(t *testing.T) {
	res := timed(t, "flights", Options{DataDir: dataDir(t), Duration: 500 * time.Millisecond}, func(r *Result) bool { return r.RecordsIn > 0 })
	if res.RecordsIn == 0 {
		t.Fatal("no records")
	}
}

func TestElastic(t *testing.T) {
	res := timed(t, "elastic", Options{Duration: 600 * time.Millisecond, Rate: 100_000}, func(r *Result) bool { return r.RecordsOut > 0 })
	if !res.TimeUp || res.Interrupted || res.RecordsIn == 0 || res.RecordsOut == 0 || res.Latency.Count != res.RecordsOut {
		t.Fatalf("time up %v, interrupted %v, %d records in, %d out, %d latencies", res.TimeUp, res.Interrupted, res.RecordsIn, res.RecordsOut, res.Latency.Count)
	}
}

func TestRegistry(t *testing.T) {
	names := strings.Join(Names(), " ")
	for _, n := range []string{"ring", "pipeline", "flights", "keyed", "elastic"} {
		if !strings.Contains(names, n) {
			t.Fatalf("%s not registered (have %s)", n, names)
		}
	}
	if _, err := Lookup("nope"); err == nil {
		t.Fatal("Lookup of an unknown workload")
	}
}

// A run stopped by its context (Ctrl-C in streamd bench) before its
// Duration is interrupted, not out of time.
func TestPipelineCanceled(t *testing.T) {
	w, err := Lookup("pipeline")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer time.AfterFunc(300*time.Millisecond, cancel).Stop()
	res, err := RunContext(ctx, w, Options{Rate: 100_000, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || res.TimeUp || res.RecordsIn == 0 {
		t.Fatalf("interrupted %v, time up %v, %d records in", res.Interrupted, res.TimeUp, res.RecordsIn)
	}
}
