package main

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunCompressedGlob: streamd run over a glob of CSV files, two of them
// gzip-compressed, reads them in name order as one input (running counts
// and sums per origin); validate refuses a glob that matches nothing (exit 2)
// and a truncated file fails the run (exit 1) naming file and compression.
func TestRunCompressedGlob(t *testing.T) {
	dir := t.TempDir()
	gz := func(s string) string {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write([]byte(s))
		w.Close()
		return b.String()
	}
	a := "origin,delay\nSFO,5\nLAX,7\n"
	b := "origin,delay\nJFK,1\nSFO,2\n"
	c := "origin,delay\nLAX,3\n"
	writeTestFile(t, filepath.Join(dir, "in", "a.csv.gz"), gz(a))
	writeTestFile(t, filepath.Join(dir, "in", "b.csv"), b)
	writeTestFile(t, filepath.Join(dir, "in", "c.csv.gz"), gz(c))
	job := filepath.Join(dir, "job.yaml")
	writeTestFile(t, job, `source:
  csv:
    path: "in/*"
    columns: {origin: string, delay: int64}
region:
  key_by: [origin]
  ops:
    - aggregate: {aggregates: {n: count, total: sum(delay)}}
sink:
  csv: {path: out.csv}
`)
	if code, _, stderr := cli(t, "run", job, "--quiet"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	out, _ := os.ReadFile(filepath.Join(dir, "out.csv"))
	if got, want := string(out), "origin,n,total\nSFO,1,5\nLAX,1,7\nJFK,1,1\nSFO,2,7\nLAX,2,10\n"; got != want {
		t.Errorf("output\n%s\nwant\n%s", got, want)
	}

	none := filepath.Join(dir, "none.yaml")
	writeTestFile(t, none, "source:\n  csv: {path: \"nothing/*.csv.gz\"}\nsink:\n  discard: {}\n")
	if code, _, stderr := cli(t, "validate", none); code != 2 || !strings.Contains(stderr, "none.yaml:2:15: source.csv.path: pattern") || !strings.Contains(stderr, "no files match it") {
		t.Errorf("validate, no match: exit %d, %q", code, stderr)
	}

	full := gz(c)
	writeTestFile(t, filepath.Join(dir, "in", "c.csv.gz"), full[:len(full)-5])
	code, _, stderr := cli(t, "run", job, "--quiet")
	if code == 0 || !strings.Contains(stderr, "in/c.csv.gz: gzip: truncated stream") {
		t.Errorf("truncated: exit %d, %q", code, stderr)
	}
}

// A Parquet file's bytes do not depend on the channel count, the source
// workers or checkpoints (whose barriers cut the output into parts): the
// merger's batches, which follow them and the timing, do not decide where
// the file's pages end.
func TestParquetIndependentOfChannels(t *testing.T) {
	dir := t.TempDir()
	job := filepath.Join(dir, "job.yaml")
	text := `source: {generator: {count: 200000, keys: 1000, seed: 3}}
region: {channels: 2, key_by: [key], ops: [{filter: value > 100}]}
sink: {parquet: {path: out.parquet}}
`
	writeTestFile(t, job, text)
	ckJob := filepath.Join(dir, "ck.yaml")
	writeTestFile(t, ckJob, strings.Replace(text, "sink:", "checkpoint: {dir: ck, interval: 10ms}\nsink:", 1))
	var ref []byte
	for _, args := range [][]string{
		{job, "--channels", "1"}, {job, "--channels", "2"}, {job, "--channels", "4"},
		{job, "--source-parallelism", "2"}, {ckJob, "--channels", "3"},
	} {
		if code, _, stderr := cli(t, append([]string{"run", "--quiet"}, args...)...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		out, err := os.ReadFile(filepath.Join(dir, "out.parquet"))
		if err != nil {
			t.Fatal(err)
		}
		if ref == nil {
			ref = out
		} else if !bytes.Equal(out, ref) {
			t.Fatalf("%v: the file differs from --channels 1's (%d and %d bytes)", args, len(out), len(ref))
		}
	}
}
