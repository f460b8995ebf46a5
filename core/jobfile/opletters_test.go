package jobfile

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"streamd/core/runtime"
)

// Dead letters of operators built from a job file (a failing map in the
// pipeline, run by each source worker, and a failing map and filter in the
// region, run by each channel) are written in input order, like the
// source's own: the same dead-letter file for any source parallelism and
// channel count (docs/JOB.md, "Parallel reading"). Operators once wrote
// through the job's policy directly, each stage as it met its records.
func TestOperatorDeadLettersInInputOrder(t *testing.T) {
	run := func(m, n int) string {
		dir := t.TempDir()
		text := "on_error: dead_letter\ndead_letter_path: dead.jsonl\n" +
			"source:\n  generator: {seed: 3, count: 60000, keys: 100}\n" +
			"pipeline:\n  - map: {p: value % (value - 499)}\n" +
			"region:\n  key_by: [key]\n  ops:\n    - map: {q: 100 % value}\n    - filter: q % (value - 7) >= 0\n" +
			"sink:\n  csv: {path: out.csv}\n"
		job := buildJobFile(t, dir, text, Options{Channels: n})
		job.SourceParallelism = m
		if _, err := runtime.Run(context.Background(), job); err != nil {
			t.Fatalf("%d workers, %d channels: %v", m, n, err)
		}
		dead := readFile(t, filepath.Join(dir, "dead.jsonl"))
		return dead + "--- output\n" + readFile(t, filepath.Join(dir, "out.csv"))
	}
	want := run(1, 1)
	var last int64
	inputs := map[string]int{}
	for l := range strings.Lines(want[:strings.Index(want, "--- output\n")]) {
		var d struct {
			Input string
			Pos   int64
		}
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Fatal(err)
		}
		if d.Pos < last {
			t.Fatalf("one worker, one channel: dead letter at %d after one at %d", d.Pos, last)
		}
		last = d.Pos
		inputs[d.Input]++
	}
	if len(inputs) != 3 {
		t.Fatalf("dead letters by operator: %v, want pipeline[0].map, region.ops[0].map and region.ops[1].filter", inputs)
	}
	for _, mn := range [][2]int{{1, 2}, {2, 1}, {3, 2}, {2, 3}} {
		if got := run(mn[0], mn[1]); got != want {
			t.Fatalf("%d workers, %d channels: dead letters or output differ from one worker and one channel", mn[0], mn[1])
		}
	}
}
