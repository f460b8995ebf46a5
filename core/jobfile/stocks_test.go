package jobfile

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"streamd/core/runtime"
)

// examples/stocks/job.yaml (dates written "Jan 3 2000", read with a
// strftime format in America/New_York, monthly windows in New York) gives
// the grouping sqlite3 gives: sqlite3 turns the text dates into ISO dates
// itself (month names by position) and groups by strftime('%Y-%m'); each
// streamd row's window_start, read in New York, must be the 1st of that
// month at midnight, and count, min, max and avg must match.
func TestStocksExampleMatchesSQLite(t *testing.T) {
	if _, err := exec.LookPath("sqlite3"); err != nil {
		t.Fatalf("sqlite3 is needed for this test (.ci/run installs it): %v", err)
	}
	dir := t.TempDir()
	for _, name := range []string{"job.yaml", "stocks.csv"} {
		copyFile(t, filepath.Join("..", "..", "examples", "stocks", name), filepath.Join(dir, name))
	}
	t.Setenv("STREAMD_OUT", "out")
	job := filepath.Join(dir, "job.yaml")
	f, err := Load(job)
	if err != nil {
		t.Fatal(err)
	}
	j, err := f.Build(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.Run(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	out := strings.Split(strings.TrimSpace(readFile(t, filepath.Join(dir, "out", "stocks-monthly.csv"))), "\n")

	sql := `.mode csv
.import ` + filepath.Join(dir, "stocks.csv") + ` stocks
CREATE VIEW iso AS SELECT symbol, price,
  printf('%04d-%02d-%02d', CAST(substr(date, -4) AS INT),
    (instr('JanFebMarAprMayJunJulAugSepOctNovDec', substr(date, 1, 3)) + 2) / 3,
    CAST(substr(date, 5, instr(substr(date, 5), ' ') - 1) AS INT)) AS day
  FROM stocks;
SELECT strftime('%Y-%m', day), symbol, count(*), min(CAST(price AS REAL)), max(CAST(price AS REAL)), avg(CAST(price AS REAL))
  FROM iso GROUP BY 1, 2 ORDER BY 1, 2;
`
	cmd := exec.Command("sqlite3")
	cmd.Stdin = strings.NewReader(sql)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("sqlite3: %v: %s", err, stderr.String())
	}
	ref := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(out)-1 != len(ref) || len(ref) != 26*3 {
		t.Fatalf("%d rows from streamd, %d from sqlite3, want %d", len(out)-1, len(ref), 26*3)
	}
	ny, _ := time.LoadLocation("America/New_York")
	for i, line := range out[1:] {
		got := strings.Split(line, ",") // window_start,window_end,symbol,days,low,high,mean
		want := strings.Split(ref[i], ",")
		start, err := time.Parse(time.RFC3339, got[0])
		if err != nil {
			t.Fatal(err)
		}
		local := start.In(ny)
		if local.Format("2006-01") != want[0] || local.Day() != 1 || local.Hour() != 0 || got[2] != want[1] || got[3] != want[2] {
			t.Fatalf("row %d: streamd %s (New York %s), sqlite3 %s", i+1, line, local, ref[i])
		}
		for k := 4; k <= 6; k++ {
			a, _ := strconv.ParseFloat(got[k], 64)
			b, _ := strconv.ParseFloat(want[k-1], 64)
			if d := a - b; d > 1e-9*b || d < -1e-9*b {
				t.Fatalf("row %d field %d: streamd %s, sqlite3 %s", i+1, k, line, ref[i])
			}
		}
	}
}
