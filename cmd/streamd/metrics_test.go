package main

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"streamd/core"
	"streamd/core/jobfile"
	"streamd/core/runtime"
)

// quickJob writes the quick-start job with count records to a temporary
// job file, its output going to a temporary directory.
func quickJob(t *testing.T, count int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "examples", "quickstart", "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), "count: 2000000", "count: "+strconv.Itoa(count), 1)
	if text == string(b) {
		t.Fatal("quick-start job has no count: 2000000")
	}
	dir := t.TempDir()
	t.Setenv("STREAMD_OUT", filepath.Join(dir, "out"))
	job := filepath.Join(dir, "job.yaml")
	writeTestFile(t, job, text)
	return job
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var (
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*")*\})? (\S+)$`)
	typeLine   = regexp.MustCompile(`^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|summary|histogram|untyped)$`)
)

// parseExposition checks that text is well-formed Prometheus text format
// (every sample a valid line of a family typed before it) and returns the
// samples as "name{labels}" → value.
func parseExposition(t *testing.T, text string) map[string]float64 {
	t.Helper()
	typed := map[string]bool{}
	out := map[string]float64{}
	for i, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "# HELP "):
		case strings.HasPrefix(l, "# TYPE "):
			m := typeLine.FindStringSubmatch(l)
			if m == nil || typed[m[1]] {
				t.Fatalf("line %d: bad or repeated TYPE line %q", i+1, l)
			}
			typed[m[1]] = true
		default:
			m := sampleLine.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("line %d: not a sample: %q", i+1, l)
			}
			family := m[1]
			for _, suffix := range []string{"_sum", "_count", "_bucket"} {
				if b := strings.TrimSuffix(family, suffix); b != family && typed[b] {
					family = b
				}
			}
			if !typed[family] {
				t.Fatalf("line %d: sample of %s before its TYPE line", i+1, m[1])
			}
			v, err := strconv.ParseFloat(m[3], 64)
			if err != nil {
				t.Fatalf("line %d: value %q: %v", i+1, m[3], err)
			}
			out[m[1]+m[2]] = v
		}
	}
	return out
}

// TestMetricsDuringJob scrapes /metrics, /readyz, /healthz and the pprof
// index while a real job runs (from the sink's goroutine, once the first
// batch reached the sink, so the figures are not zero), and /readyz before
// and after the job.
func TestMetricsDuringJob(t *testing.T) {
	f, err := jobfile.Load(quickJob(t, 200_000))
	if err != nil {
		t.Fatal(err)
	}
	job, err := f.Build(jobfile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := observe(job, runFlags{quiet: true, metricsAddr: "127.0.0.1:0", pprofAddr: "127.0.0.1:0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer obs.close()
	base := "http://" + obs.metrics.addr()
	if code, _ := httpGet(t, base+"/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before the job: %d, want 503", code)
	}

	var once sync.Once
	var metrics string
	var ready, healthy, pprofCode int
	var pprofBody string
	sink := job.OnSink
	job.OnSink = func(b *core.Batch) {
		sink(b)
		once.Do(func() {
			_, metrics = httpGet(t, base+"/metrics")
			ready, _ = httpGet(t, base+"/readyz")
			healthy, _ = httpGet(t, base+"/healthz")
			pprofCode, pprofBody = httpGet(t, "http://"+obs.pprofLn.Addr().String()+"/debug/pprof/")
		})
	}
	rep, err := runtime.Run(t.Context(), job, runtime.OnStart(obs.started))
	obs.end()
	if err != nil {
		t.Fatal(err)
	}
	if ready != 200 || healthy != 200 {
		t.Errorf("during the job: /readyz %d, /healthz %d; want 200, 200", ready, healthy)
	}
	if pprofCode != 200 || !strings.Contains(pprofBody, "goroutine") {
		t.Errorf("/debug/pprof/: %d, %.200q", pprofCode, pprofBody)
	}
	s := parseExposition(t, metrics)
	positive := []string{
		`streamd_job_info{job="quickstart"}`,
		`streamd_records_in_total`,
		`streamd_records_out_total`,
		`streamd_operator_records_in_total{operator="region.ops[0].filter",stage="region"}`,
		`streamd_operator_records_in_total{operator="region.ops[1].window",stage="region"}`,
		`streamd_channel_records_total{channel="0"}`,
		`streamd_channel_records_total{channel="1"}`,
		`streamd_channel_busy_seconds_total{channel="0"}`,
		`streamd_ring_capacity_batches`,
		`streamd_channels`,
		`streamd_source_size_records`,
		`streamd_job_running`,
		`streamd_sink_latency_seconds{quantile="0.99"}`,
		`go_goroutines`,
	}
	for _, k := range positive {
		if v, ok := s[k]; !ok || !(v > 0) {
			t.Errorf("%s = %v (present %v), want > 0", k, v, ok)
		}
	}
	present := []string{
		`streamd_channel_splitter_blocked_seconds_total{channel="1"}`,
		`streamd_channel_ring_batches{channel="1"}`,
		`streamd_congestion_index`,
		`streamd_rescales_total`,
		`streamd_late_records_total`,
		`streamd_skipped_records_total`,
		`streamd_dead_letter_records_total`,
		`go_gc_duration_seconds_count`,
		`process_cpu_seconds_total`,
	}
	for _, k := range present {
		if _, ok := s[k]; !ok {
			t.Errorf("%s missing", k)
		}
	}
	if s[`streamd_channels`] != 2 || s[`streamd_source_size_records`] != 200_000 {
		t.Errorf("channels %v, source size %v; want 2, 200000", s[`streamd_channels`], s[`streamd_source_size_records`])
	}
	if in := s[`streamd_records_in_total`]; in > float64(rep.RecordsIn) {
		t.Errorf("records in %v during the job, more than the %d at its end", in, rep.RecordsIn)
	}
	if c := s[`streamd_congestion_index`]; c < 0 || c > 1 {
		t.Errorf("congestion index %v outside [0, 1]", c)
	}
	if _, ok := s[`streamd_channel_ring_batches{channel="2"}`]; ok {
		t.Error("ring occupancy for channel 2 of 2")
	}
	// Every streamd_ metric served is in docs/JOB.md's metrics table.
	table := metricsTable(t)
	for _, line := range strings.Split(metrics, "\n") {
		if name, ok := strings.CutPrefix(line, "# TYPE streamd_"); ok {
			name = "streamd_" + strings.Fields(name)[0]
			if !table[name] {
				t.Errorf("/metrics serves %s, which docs/JOB.md's metrics table lacks", name)
			}
		}
	}

	if code, _ := httpGet(t, base+"/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz after the job: %d, want 503", code)
	}
	if code, _ := httpGet(t, base+"/healthz"); code != 200 {
		t.Errorf("/healthz after the job: %d, want 200", code)
	}
	if code, body := httpGet(t, base+"/metrics"); code != 200 || !strings.Contains(body, "streamd_job_running 0\n") {
		t.Errorf("/metrics after the job: %d, running not 0:\n%s", code, body)
	}
}

// metricsTable is the set of metric names (in backquotes) in the first
// column of docs/JOB.md's metrics table.
func metricsTable(t *testing.T) map[string]bool {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "JOB.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "\n| metric | type | labels | what |\n")
	if !ok {
		t.Fatal("docs/JOB.md has no metrics table")
	}
	names := map[string]bool{}
	for _, row := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(row, "|") {
			break
		}
		first := strings.Split(row, "|")[1]
		for _, m := range regexp.MustCompile("`([a-z_*]+)`").FindAllStringSubmatch(first, -1) {
			names[m[1]] = true
		}
	}
	if !names["streamd_job_info"] {
		t.Fatalf("docs/JOB.md's metrics table: no streamd_job_info in %v", names)
	}
	return names
}

// TestRunProfileFlags: the CLI accepts the observability flags, serves on
// loopback and writes the mutex profile.
func TestRunProfileFlags(t *testing.T) {
	job := quickJob(t, 20_000)
	mutex := filepath.Join(t.TempDir(), "mutex.pprof")
	code, stdout, stderr := cli(t, "run", job, "--quiet", "--metrics-addr", "127.0.0.1:0", "--pprof-addr", "127.0.0.1:0",
		"--mutexprofile", mutex, "--status-interval", "1s")
	if code != 0 || stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if fi, err := os.Stat(mutex); err != nil || fi.Size() == 0 {
		t.Errorf("mutex profile: %v", err)
	}
	code, _, stderr = cli(t, "run", job, "--quiet", "--metrics-addr", "127.0.0.1:-1")
	if code != 2 || !strings.Contains(stderr, "metrics:") {
		t.Errorf("bad --metrics-addr: exit %d, stderr %q; want 2, a metrics error", code, stderr)
	}
}

// A bare ":port" serves profiles and metrics on loopback only; a named
// host is kept (checked by name, not by binding every interface here).
func TestObserverAddrLoopbackDefault(t *testing.T) {
	for in, want := range map[string]string{
		":0":           "127.0.0.1:0",
		":9090":        "127.0.0.1:9090",
		"0.0.0.0:9090": "0.0.0.0:9090",
		"[::1]:7":      "[::1]:7",
		"localhost:8":  "localhost:8",
		"nonsense":     "nonsense",
	} {
		if got := loopbackDefault(in); got != want {
			t.Errorf("loopbackDefault(%q) = %q, want %q", in, got, want)
		}
	}
	srv, ln, err := listenPprof(":0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if a := ln.Addr().(*net.TCPAddr); !a.IP.IsLoopback() {
		t.Errorf("pprof on :0 listens on %s, want loopback", a)
	}
}
