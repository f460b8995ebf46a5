package main

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"streamd/internal/tier"
)

// dataDir finds ../shared/data beside the repository (CI lays it there).
func dataDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("STREAMD_DATA"); d != "" {
		if abs, err := filepath.Abs(d); err == nil {
			return abs
		}
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		p := filepath.Join(d, "shared", "data")
		if _, err := os.Stat(filepath.Join(p, "flights-3m.parquet")); err == nil {
			return p
		}
		if d == filepath.Dir(d) {
			t.Fatalf("shared/data/flights-3m.parquet not found above %s: lay ../shared beside the repository (scripts/fetch-data.sh)", dir)
		}
	}
}

func repoRoot(t testing.TB) string {
	t.Helper()
	d, _ := os.Getwd()
	return filepath.Dir(filepath.Dir(d)) // cmd/streamd → repo
}

// runFlights runs examples/flights/job.yaml through the CLI with n channels
// and returns the output file's bytes.
func runFlights(t *testing.T, data string, n int, flags ...string) []byte {
	t.Helper()
	out := t.TempDir()
	t.Setenv("STREAMD_DATA", data)
	t.Setenv("STREAMD_OUT", out)
	job := filepath.Join(repoRoot(t), "examples", "flights", "job.yaml")
	args := append([]string{"run", job, "--quiet", "--channels", strconv.Itoa(n)}, flags...)
	if code := run(args); code != 0 {
		t.Fatalf("streamd %v exited %d", args[2:], code)
	}
	b, err := os.ReadFile(filepath.Join(out, "flights-hourly.csv"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type flightRow struct {
	Date        int64  `parquet:"date"`
	Delay       int64  `parquet:"delay"`
	Distance    int64  `parquet:"distance"`
	Origin      string `parquet:"origin"`
	Destination string `parquet:"destination"`
}

// sqliteReference computes the job's aggregation with the sqlite3 program
// over the same 3,000,000 rows. The rows reach SQLite through parquet-go's
// generic row reader, not through streamd's Parquet source.
func sqliteReference(t *testing.T, data string) [][]string {
	t.Helper()
	if _, err := exec.LookPath("sqlite3"); err != nil {
		t.Fatalf("sqlite3 is needed for this test (.ci/run installs it): %v", err)
	}
	tmp := t.TempDir()
	f, err := os.Open(filepath.Join(data, "flights-3m.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd := parquet.NewGenericReader[flightRow](f)
	defer rd.Close()
	csvPath := filepath.Join(tmp, "flights.csv")
	out, err := os.Create(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	w := csv.NewWriter(out)
	rows := make([]flightRow, 4096)
	total := 0
	rec := make([]string, 5)
	for {
		n, err := rd.Read(rows)
		for _, r := range rows[:n] {
			rec[0] = strconv.FormatInt(r.Date, 10)
			rec[1] = strconv.FormatInt(r.Delay, 10)
			rec[2] = strconv.FormatInt(r.Distance, 10)
			rec[3], rec[4] = r.Origin, r.Destination
			w.Write(rec)
		}
		total += n
		if err != nil {
			break
		}
	}
	w.Flush()
	out.Close()
	if total != 3_000_000 {
		t.Fatalf("reference reader saw %d rows, want 3000000", total)
	}
	// date is µs since the epoch (TIMESTAMP(MICROS)); an hour is 3.6e9 µs.
	script := fmt.Sprintf(`
CREATE TABLE flights(date INTEGER, delay INTEGER, distance INTEGER, origin TEXT, destination TEXT);
.mode csv
.import %s flights
.import %s airports
.headers off
SELECT strftime('%%Y-%%m-%%dT%%H:%%M:%%SZ', (date/3600000000)*3600, 'unixepoch'),
       strftime('%%Y-%%m-%%dT%%H:%%M:%%SZ', (date/3600000000+1)*3600, 'unixepoch'),
       f.origin, coalesce(a.city, ''), coalesce(a.state, ''),
       count(*), sum(delay > 15), printf('%%.17g', avg(delay)), max(delay), sum(distance)
FROM flights f LEFT JOIN airports a ON a.iata = f.origin
GROUP BY date/3600000000, f.origin
ORDER BY date/3600000000, f.origin;
`, csvPath, filepath.Join(data, "airports.csv"))
	cmd := exec.Command("sqlite3", filepath.Join(tmp, "ref.db"))
	cmd.Stdin = bytes.NewBufferString(script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("sqlite3: %v: %s", err, stderr.String())
	}
	ref, err := csv.NewReader(&stdout).ReadAll()
	if err != nil {
		t.Fatalf("sqlite3 output: %v", err)
	}
	return ref
}

// The flights job equals SQLite's GROUP BY over the same rows, and its
// output file is byte-identical for 1, 2, 3, 4 and 8 channels, and with
// 1, 2, 3 or 8 source workers and 0 to 3 output workers. The fast tier
// runs 1, 2 and 8 channels with the default workers and two of the four
// worker settings (3 source workers, 2 output workers, 2 channels; 8, 1
// and 3), so channels 1, 2, 3 and 8 all run; the long tier all of them.
func TestFlightsJobMatchesSQLite(t *testing.T) {
	data := dataDir(t)
	base := runFlights(t, data, 1)
	for _, n := range tier.Pick([]int{2, 8}, []int{2, 3, 4, 8}) {
		if got := runFlights(t, data, n); !bytes.Equal(got, base) {
			t.Fatalf("output with %d channels differs from 1 channel (%d vs %d bytes)", n, len(got), len(base))
		}
	}
	// Source workers (row groups read at once) and output workers (the
	// post-region lookup and projection, CSV encoding) change nothing.
	for _, c := range tier.Pick([][3]int{{3, 2, 2}, {8, 3, 1}}, [][3]int{{2, 1, 0}, {3, 2, 2}, {8, 3, 1}, {1, 2, 3}}) {
		flags := []string{"--source-parallelism", strconv.Itoa(c[0])}
		if c[2] > 0 {
			flags = append(flags, "--output-workers", strconv.Itoa(c[2]))
		}
		if got := runFlights(t, data, c[1], flags...); !bytes.Equal(got, base) {
			t.Fatalf("output with %v, %d channels differs from 1 channel (%d vs %d bytes)", flags, c[1], len(got), len(base))
		}
	}
	got, err := csv.NewReader(bytes.NewReader(base)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	header := []string{"window_start", "window_end", "origin", "city", "state", "flights", "delayed", "avg_delay", "max_delay", "total_distance"}
	if len(got) == 0 || fmt.Sprint(got[0]) != fmt.Sprint(header) {
		t.Fatalf("header %v, want %v", got[:min(1, len(got))], header)
	}
	got = got[1:]
	ref := sqliteReference(t, data)
	if len(got) != 424259 || len(ref) != 424259 {
		t.Fatalf("%d windows from streamd, %d from sqlite3, want 424259 each", len(got), len(ref))
	}
	for i := range ref {
		g, r := got[i], ref[i]
		for j := range header {
			if j == 7 {
				gf, err1 := strconv.ParseFloat(g[j], 64)
				rf, err2 := strconv.ParseFloat(r[j], 64)
				if err := errors.Join(err1, err2); err != nil || math.Abs(gf-rf) > 1e-9 {
					t.Fatalf("row %d avg_delay %s, sqlite3 %s (%v)", i+1, g[j], r[j], err)
				}
				continue
			}
			if g[j] != r[j] {
				t.Fatalf("row %d %s = %q, sqlite3 %q\nstreamd %v\nsqlite3 %v", i+1, header[j], g[j], r[j], g, r)
			}
		}
	}
}

// runJobText writes a job file next to nothing (paths come from
// STREAMD_DATA and STREAMD_OUT) and runs it with the CLI.
func runJobText(t *testing.T, text string, args ...string) []byte {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("STREAMD_OUT", dir)
	job := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(job, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := run(append([]string{"run", job, "--quiet"}, args...)); code != 0 {
		t.Fatalf("streamd run %s exited %d", job, code)
	}
	entries, _ := filepath.Glob(filepath.Join(dir, "*.csv"))
	if len(entries) != 1 {
		t.Fatalf("outputs %v", entries)
	}
	b, err := os.ReadFile(entries[0])
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The flights job and a generator job over 1 M keys produce, while their
// channel count changes at random (seeded, every few batches, 1..8
// channels, key groups handed over in memory), exactly the output of a
// static 1-channel run. The fast tier runs 3 seeds on a slice of the
// flights (flightsFile) and 250 K generated records; the long tier 6 on the
// 3 M flights and 1 M records.
func TestRescaledJobsMatchStatic(t *testing.T) {
	data := dataDir(t)
	t.Setenv("STREAMD_DATA", data)
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "examples", "flights", "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	example := withFlightsFile(t, string(b), flightsFile(t, data))
	flights := strings.Replace(example, "  key_by: [origin]\n", "  key_by: [origin]\n  elastic: {random_every: %d, seed: %d, max_channels: 8}\n", 1)
	if flights == example {
		t.Fatal("examples/flights/job.yaml has no key_by line to extend")
	}
	seeds := tier.Pick(3, 6)
	static := runJobText(t, example)
	for seed := 1; seed <= seeds; seed++ {
		if got := runJobText(t, fmt.Sprintf(flights, 2+seed%3, seed)); !bytes.Equal(got, static) {
			t.Fatalf("flights, seed %d: rescaled output differs from static (%d vs %d bytes)", seed, len(got), len(static))
		}
	}
	gen := `name: gen
source:
  generator: {seed: 3, count: COUNT, keys: 1000000, distribution: uniform, step: 1ms}
event_time: {field: ts}
region:
  channels: 1
  key_by: [key]
%s  ops:
    - window:
        size: 5m
        aggregates: {n: count, total: sum(value), top: max(value)}
sink:
  csv: {path: "${STREAMD_OUT}/gen.csv"}
`
	gen = strings.Replace(gen, "COUNT", fmt.Sprint(tier.Pick(250_000, 1_000_000)), 1)
	base := runJobText(t, fmt.Sprintf(gen, ""))
	for seed := 1; seed <= seeds; seed++ {
		el := fmt.Sprintf("  elastic: {random_every: %d, seed: %d, max_channels: 8}\n", 1+seed%3, seed)
		if got := runJobText(t, fmt.Sprintf(gen, el)); !bytes.Equal(got, base) {
			t.Fatalf("generator, seed %d: rescaled output differs from static (%d vs %d bytes)", seed, len(got), len(base))
		}
	}
}
