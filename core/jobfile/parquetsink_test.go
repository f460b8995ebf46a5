package jobfile

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"streamd/core/runtime"
)

// The determinism contract with a Parquet sink: a keyed window job over
// the generator writes the same Parquet bytes for source parallelism 1, 2
// and 8, channels 1 and 3 and 1 or 3 output workers; and reading that file
// back with the parquet source gives the CSV the csv sink writes
// directly, value for value.
func TestParquetSinkSameOutput(t *testing.T) {
	job := func(sink string) string {
		return "source:\n  generator: {seed: 3, count: 60000, keys: 500, distribution: zipf, step: 1ms}\n" +
			"event_time: {field: ts}\n" +
			"region:\n  key_by: [key]\n  ops:\n    - window: {size: 2s, aggregates: {n: count, s: sum(value), hi: max(value), mean: avg(value)}}\n" +
			"sink:\n  " + sink + "\n"
	}
	var want []byte
	for _, c := range [][3]int{{1, 1, 1}, {2, 3, 3}, {8, 3, 1}, {8, 1, 3}} {
		dir := t.TempDir()
		text := strings.Replace(job("parquet: {path: out/w.parquet, row_group_size: 1000, compression: zstd}"), "source:\n", fmt.Sprintf("source:\n  parallelism: %d\n", c[0]), 1)
		text += fmt.Sprintf("runtime: {output_workers: %d}\n", c[2])
		j := buildJobFile(t, dir, text, Options{Channels: c[1]})
		if _, err := runtime.Run(context.Background(), j); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, "out", "w.parquet"))
		if err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = got
			continue
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("M %d, N %d, K %d: %d bytes differ from the first run's %d", c[0], c[1], c[2], len(got), len(want))
		}
	}

	dir := t.TempDir()
	if _, err := runJobFile(t, dir, job("csv: {path: direct.csv}")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "w.parquet"), string(want))
	if _, err := runJobFile(t, dir, "source:\n  parquet: {path: w.parquet}\nsink:\n  csv: {path: back.csv}\n"); err != nil {
		t.Fatal(err)
	}
	direct, back := readFile(t, filepath.Join(dir, "direct.csv")), readFile(t, filepath.Join(dir, "back.csv"))
	if direct != back || strings.Count(direct, "\n") < 1000 {
		t.Fatalf("read back from Parquet (%d lines) differs from the csv sink's output (%d lines)", strings.Count(back, "\n"), strings.Count(direct, "\n"))
	}
}

// The parquet sink's keys are checked at their line and column.
func TestParquetSinkErrors(t *testing.T) {
	dir := t.TempDir()
	head := "source:\n  generator: {count: 10}\nsink:\n  parquet:\n"
	for _, c := range []struct{ body, want string }{
		{"    path: o.parquet\n    compression: brotli\n", `job.yaml:6:18: sink.parquet.compression: unknown compression "brotli" (expected snappy, zstd, gzip, lz4 or none)`},
		{"    path: o.parquet\n    row_group_size: -5\n", "job.yaml:6:21: sink.parquet.row_group_size: row_group_size must be between 1 and"},
		{"    compression: zstd\n", "job.yaml:4:3: sink.parquet: missing path"},
		{"    path: o.parquet\n    parts: 0\n", "job.yaml:6:12: sink.parquet.parts: parts must be between 1 and 256, not 0"},
		{"    path: o.parquet\n    partz: 4\n", `job.yaml:6:5: unknown field "partz" (expected one of path, compression, row_group_size, parts)`},
	} {
		err := buildText(t, dir, head+c.body, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.body, err, c.want)
		}
	}
}

// parts: N writes N Parquet files, the same bytes for any channel count,
// source parallelism and output workers; read back part by part, taking
// 8192 rows from each in turn (the runtime's rule for parts), they give
// the rows of the single-file sink in its order.
func TestParquetPartsSameOutput(t *testing.T) {
	job := "source:\n  generator: {seed: 9, count: 120000, keys: 2000, step: 1ms}\n" +
		"event_time: {field: ts}\n" +
		"region:\n  key_by: [key]\n  ops:\n    - window: {size: 1s, aggregates: {n: count, s: sum(value)}}\n" +
		"sink:\n  parquet: {path: out/SINK}\n"
	var ref []string
	for _, c := range [][2]int{{1, 1}, {3, 2}} {
		dir := t.TempDir()
		text := strings.Replace(job, "SINK}", "parts, parts: 3}", 1)
		text = strings.Replace(text, "source:\n", fmt.Sprintf("source:\n  parallelism: %d\n", c[0]), 1)
		j := buildJobFile(t, dir, text, Options{Channels: c[1]})
		if _, err := runtime.Run(context.Background(), j); err != nil {
			t.Fatal(err)
		}
		var parts []string
		for p := range 3 {
			parts = append(parts, readFile(t, filepath.Join(dir, "out", "parts", fmt.Sprintf("part-%05d.parquet", p))))
		}
		if ref != nil {
			for p := range parts {
				if parts[p] != ref[p] {
					t.Fatalf("M %d, N %d: part %d differs", c[0], c[1], p)
				}
			}
			continue
		}
		ref = parts
		if _, err := runJobFile(t, dir, strings.Replace(job, "SINK}", "one.parquet}", 1)); err != nil {
			t.Fatal(err)
		}
		rows := func(name string) []string {
			if _, err := runJobFile(t, filepath.Join(dir, "out"), "source:\n  parquet: {path: "+name+"}\nsink:\n  csv: {path: back.csv, header: false}\n"); err != nil {
				t.Fatal(err)
			}
			return strings.Split(strings.TrimSuffix(readFile(t, filepath.Join(dir, "out", "back.csv")), "\n"), "\n")
		}
		one := rows("one.parquet")
		var byPart [][]string
		for p := range 3 {
			byPart = append(byPart, rows(fmt.Sprintf("parts/part-%05d.parquet", p)))
		}
		if len(one) < 4*8192 {
			t.Fatalf("%d rows: too few for every part to hold several chunks", len(one))
		}
		var dealt []string
		for k := 0; len(dealt) < len(one); k++ {
			p, at := k%3, (k/3)*8192
			if at >= len(byPart[p]) {
				t.Fatalf("part %d ends at %d rows; chunk %d should be there", p, len(byPart[p]), k)
			}
			dealt = append(dealt, byPart[p][at:min(at+8192, len(byPart[p]))]...)
		}
		if strings.Join(dealt, "\n") != strings.Join(one, "\n") {
			t.Fatal("the parts, dealt back 8192 rows at a time, differ from the single file")
		}
	}
}
