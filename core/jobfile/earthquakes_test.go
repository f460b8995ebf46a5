package jobfile

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"streamd/core/runtime"
)

// examples/earthquakes/job.yaml (a gzip-compressed GeoJSON
// FeatureCollection exploded into one record per feature, fields by path,
// epoch-millisecond event time, nullable magnitudes, daily calendar
// windows, a Parquet sink) gives what sqlite3 gives on the decompressed
// document with json_each: per UTC day and event type the number of
// events, count(mag), max(mag), avg(mag) (NULL over only nulls) and the
// greatest depth. The Parquet output is read back by the parquet source.
func TestEarthquakesExampleMatchesSQLite(t *testing.T) {
	if _, err := exec.LookPath("sqlite3"); err != nil {
		t.Fatalf("sqlite3 is needed for this test (.ci/run installs it): %v", err)
	}
	dir := t.TempDir()
	for _, name := range []string{"job.yaml", "earthquakes.geojson.gz"} {
		copyFile(t, filepath.Join("..", "..", "examples", "earthquakes", name), filepath.Join(dir, name))
	}
	t.Setenv("STREAMD_OUT", "out")
	f, err := Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	j, err := f.Build(Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := runtime.Run(context.Background(), j)
	if err != nil {
		t.Fatal(err)
	}
	if rep.RecordsIn != 3000 || rep.DeadLetters != 0 || rep.Late != 0 {
		t.Fatalf("%d records in, %d dead letters, %d late; want 3000, 0, 0", rep.RecordsIn, rep.DeadLetters, rep.Late)
	}
	if _, err := runJobFile(t, filepath.Join(dir, "out"), "source:\n  parquet: {path: daily.parquet}\nsink:\n  csv: {path: daily.csv}\n"); err != nil {
		t.Fatal(err)
	}
	out := strings.Split(strings.TrimSpace(readFile(t, filepath.Join(dir, "out", "daily.csv"))), "\n")
	if out[0] != "window_start,window_end,type,events,measured,max_mag,avg_mag,deepest" {
		t.Fatalf("header %q", out[0])
	}

	gz, err := os.Open(filepath.Join(dir, "earthquakes.geojson.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(gz)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := io.ReadAll(zr)
	gz.Close()
	if err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "earthquakes.geojson")
	if err := os.WriteFile(plain, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	sql := `.mode list
.separator ,
WITH f AS (SELECT json_extract(value, '$.properties.time') AS ms, json_extract(value, '$.properties.type') AS type,
    json_extract(value, '$.properties.mag') AS mag, json_extract(value, '$.geometry.coordinates[2]') AS depth
  FROM json_each(readfile('` + plain + `'), '$.features'))
SELECT strftime('%Y-%m-%dT%H:%M:%SZ', ms / 1000 / 86400 * 86400, 'unixepoch'), type, count(*), count(mag), max(mag), avg(mag), max(depth)
  FROM f GROUP BY ms / 1000 / 86400, type ORDER BY ms / 1000 / 86400, type;
`
	cmd := exec.Command("sqlite3")
	cmd.Stdin = strings.NewReader(sql)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("sqlite3: %v: %s", err, stderr.String())
	}
	ref := strings.Split(strings.TrimSpace(strings.ReplaceAll(stdout.String(), "\r\n", "\n")), "\n")
	if len(out)-1 != len(ref) || len(ref) < 100 {
		t.Fatalf("%d rows from streamd, %d from sqlite3", len(out)-1, len(ref))
	}
	nullAvg := 0
	for i, line := range out[1:] {
		got := strings.Split(line, ",")    // window_start,window_end,type,events,measured,max_mag,avg_mag,deepest
		want := strings.Split(ref[i], ",") // day,type,count,count(mag),max,avg,max(depth)
		if got[0] != want[0] || got[2] != want[1] || got[3] != want[2] || got[4] != want[3] {
			t.Fatalf("row %d: streamd %s, sqlite3 %s", i+1, line, ref[i])
		}
		for k, w := range map[int]int{5: 4, 6: 5, 7: 6} {
			if got[k] == "" || want[w] == "" {
				if got[k] != want[w] {
					t.Fatalf("row %d field %d: streamd %q, sqlite3 %q (null on one side only)", i+1, k, got[k], want[w])
				}
				nullAvg++
				continue
			}
			a, _ := strconv.ParseFloat(got[k], 64)
			b, _ := strconv.ParseFloat(want[w], 64)
			if d := a - b; d > 1e-9*max(b, -b) || d < -1e-9*max(b, -b) {
				t.Fatalf("row %d field %d: streamd %s, sqlite3 %s", i+1, k, line, ref[i])
			}
		}
	}
	t.Logf("%d rows, %d null aggregates", len(ref), nullAvg)
}
