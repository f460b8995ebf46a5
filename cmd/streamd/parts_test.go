package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A job writing a directory of parts: validate accepts it and creates
// nothing; run writes the parts, the same for any channel count and
// source parallelism (and an --output-workers flag does not change them:
// the parts are the output workers); parts: 0 is refused by validate at
// its line and column.
func TestPartsCLI(t *testing.T) {
	dir := t.TempDir()
	job := filepath.Join(dir, "job.yaml")
	writeTestFile(t, job, `source:
  generator: {seed: 3, count: 40000, keys: 50, step: 1ms}
event_time: {field: ts}
region:
  channels: 2
  key_by: [key]
  ops: [{filter: value % 3 != 0}]
post:
  - map: {double: value * 2}
sink:
  jsonl: {path: out/parts, parts: 3}
`)
	if code, out, stderr := cli(t, "validate", job); code != 0 || out != job+": ok\n"+strongPromise || stderr != "" {
		t.Fatalf("validate: exit %d, %q, %q", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
		t.Fatalf("validate created the sink's directory: %v", err)
	}
	var ref [][]byte
	for _, args := range [][]string{{"--channels", "1", "--source-parallelism", "1"}, {"--channels", "3", "--source-parallelism", "2", "--output-workers", "2"}} {
		if code, _, stderr := cli(t, append([]string{"run", job, "--quiet"}, args...)...); code != 0 {
			t.Fatalf("run %v: exit %d: %s", args, code, stderr)
		}
		var parts [][]byte
		for _, name := range []string{"part-00000.jsonl", "part-00001.jsonl", "part-00002.jsonl"} {
			b, err := os.ReadFile(filepath.Join(dir, "out", "parts", name))
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, b)
		}
		if ref == nil {
			ref = parts
			if n := bytes.Count(parts[2], []byte("\n")); n == 0 {
				t.Fatal("the last part is empty: fewer than 3 chunks")
			}
			continue
		}
		for p := range parts {
			if !bytes.Equal(parts[p], ref[p]) {
				t.Fatalf("run %v: part %d differs", args, p)
			}
		}
	}
	bad := filepath.Join(dir, "bad.yaml")
	writeTestFile(t, bad, "source: {generator: {count: 10}}\nsink:\n  csv: {path: out/p, parts: 0}\n")
	code, _, stderr := cli(t, "validate", bad)
	if want := bad + ":3:29: sink.csv.parts: parts must be between 1 and 256, not 0"; code != 2 || !strings.Contains(stderr, want) {
		t.Fatalf("validate parts: 0: exit %d, %q; want 2, %q", code, stderr, want)
	}
}
