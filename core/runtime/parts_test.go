package runtime_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"streamd/core"
	"streamd/core/runtime"
	"streamd/core/sink"
)

// readParts reads the n CSV part files of dir.
func readParts(t *testing.T, dir string, n int) [][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != n {
		t.Fatalf("%s holds %d files, want %d parts", dir, len(entries), n)
	}
	parts := make([][]byte, n)
	for p := range parts {
		if parts[p], err = os.ReadFile(filepath.Join(dir, sink.PartName(p, "csv"))); err != nil {
			t.Fatal(err)
		}
	}
	return parts
}

// fromChunks rebuilds the output order from parts without post-region
// operators, by the documented rule: chunk c (runtime.PartChunk records of
// the merger's order) is in part c mod N, after its header and chunks
// c−N, c−2N, … .
func fromChunks(t *testing.T, parts [][]byte) (header string, rows []string) {
	t.Helper()
	lines := make([][]string, len(parts))
	for p, b := range parts {
		l := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if p > 0 && l[0] != header {
			t.Fatalf("part %d's header %q, part 0's %q", p, l[0], header)
		}
		header, lines[p] = l[0], l[1:]
	}
	for c := 0; ; c++ {
		l := lines[c%len(parts)]
		if len(l) == 0 {
			for p, rest := range lines {
				if len(rest) != 0 {
					t.Fatalf("chunk %d is empty but part %d holds %d more rows", c, p, len(rest))
				}
			}
			return header, rows
		}
		k := min(len(l), runtime.PartChunk)
		rows = append(rows, l[:k]...)
		lines[c%len(parts)] = l[k:]
	}
}

// A sink of parts: the part files are byte for byte the same for 1, 2 and
// 3 channels and the single source stage or 1 or 2 source workers, with
// post-region operators that drop and reshape records; without them, the
// parts hold the single file's rows chunk by chunk, round-robin
// (runtime.PartChunk), each part with the header. A job without a region
// follows the same rule.
func TestPartsIndependentOfChannelsAndWorkers(t *testing.T) {
	dir := t.TempDir()
	recs := outOfOrder(36_000, 300, 8) // 32 K rows out: 4 chunks
	job := func(m, n, parts int, post bool, path string) *runtime.Job {
		j := outputJob(t, filepath.Join(dir, "unused.csv"), m, n, 0)
		j.Source = newBlockSource(recs, 4)
		j.OutputParallelism = 0
		if !post {
			j.Post = nil
		}
		if parts > 0 {
			j.Sink = sink.CSVParts(path, parts, sink.CSVOptions{Header: true})
		} else {
			j.Sink = sink.CSV(path, sink.CSVOptions{Header: true})
		}
		return j
	}
	// Without post-region operators: the rule, against the single file.
	single := filepath.Join(dir, "single.csv")
	if _, err := runtime.Run(context.Background(), job(-1, 1, 0, false, single)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(single)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(want) < 3*runtime.PartChunk {
		t.Fatalf("the single file has %d lines, fewer than 3 chunks", len(want))
	}
	plain := filepath.Join(dir, "plain")
	rep, err := runtime.Run(context.Background(), job(2, 3, 3, false, plain))
	if err != nil {
		t.Fatal(err)
	}
	header, rows := fromChunks(t, readParts(t, plain, 3))
	if header != want[0] || !slices.Equal(rows, want[1:]) {
		t.Fatalf("parts rebuilt by chunks: %d rows, the single file %d: %s", len(rows), len(want)-1, diffAt(rows, want[1:]))
	}
	outputs, writers := 0, 0
	for _, s := range rep.Stages {
		switch s.Stage {
		case "output":
			outputs++
		case "writer":
			writers++
		}
	}
	if outputs != 3 || writers != 0 {
		t.Fatalf("%d output stages and %d writers reported, want 3 and none", outputs, writers)
	}
	// With post-region operators: the same parts for every M and N.
	var ref [][]byte
	for _, mn := range [][2]int{{-1, 1}, {1, 2}, {2, 3}, {2, 1}, {-1, 3}} {
		path := filepath.Join(dir, fmt.Sprintf("post-%d-%d", mn[0], mn[1]))
		if _, err := runtime.Run(context.Background(), job(mn[0], mn[1], 2, true, path)); err != nil {
			t.Fatalf("%v: %v", mn, err)
		}
		got := readParts(t, path, 2)
		if ref == nil {
			ref = got
			continue
		}
		for p := range got {
			if !bytes.Equal(got[p], ref[p]) {
				t.Fatalf("%d source workers, %d channels: part %d differs (%d vs %d bytes)", mn[0], mn[1], p, len(got[p]), len(ref[p]))
			}
		}
	}
	// Without a region: the source stage cuts the chunks.
	src := &sliceSource{recs: genRecords(3*runtime.PartChunk+100, 5, 3), rnd: rand.New(rand.NewPCG(3, 3))}
	flat := filepath.Join(dir, "flat")
	if _, err := runtime.Run(context.Background(), &runtime.Job{Source: src, Sink: sink.CSVParts(flat, 2, sink.CSVOptions{Header: true})}); err != nil {
		t.Fatal(err)
	}
	_, rows = fromChunks(t, readParts(t, flat, 2))
	if len(rows) != 3*runtime.PartChunk+100 {
		t.Fatalf("no region: %d rows in the parts", len(rows))
	}
}

// A sink of parts with checkpoints is refused before anything runs.
func TestPartsRefuseCheckpoints(t *testing.T) {
	job := outputJob(t, filepath.Join(t.TempDir(), "x.csv"), 1, 1, 0)
	job.Sink = sink.CSVParts(filepath.Join(t.TempDir(), "parts"), 2, sink.CSVOptions{})
	job.Checkpoint = &runtime.Checkpointing{}
	if _, err := runtime.Run(context.Background(), job); err == nil || !strings.Contains(err.Error(), "parts") {
		t.Fatalf("error %v", err)
	}
}

// A post-region operator failing in a part's worker stops the job; no
// directory of parts appears, and nothing is left beside it.
func TestPartsWorkerError(t *testing.T) {
	dir := t.TempDir()
	job := outputJob(t, filepath.Join(dir, "x.csv"), 2, 2, 0)
	job.OutputParallelism = 0
	job.Sink = sink.CSVParts(filepath.Join(dir, "parts"), 3, sink.CSVOptions{})
	fail := core.OperatorDef{Name: "fail", Out: job.Post[1].Out, New: func(core.Env) (core.Operator, error) { return &failAfter{n: 5}, nil }}
	job.Post = append(job.Post, fail)
	if _, err := runtime.Run(context.Background(), job); err == nil || !strings.Contains(err.Error(), "operator exploded") {
		t.Fatalf("error %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("left after a failure: %v", entries)
	}
}

// Under on_error: fail a post-region operator in the parts' workers fails
// the job on the first bad row in the merger's order, as the merger alone
// does with one file: the workers' failures are decided by chunk, the
// order of the records they hold.
func TestPartsFailOnFirstBadRow(t *testing.T) {
	dir := t.TempDir()
	run := func(parts int) error {
		job := outputJob(t, filepath.Join(dir, "single.csv"), 2, 2, -1)
		job.Source = newBlockSource(outOfOrder(36_000, 300, 8), 4)
		if parts > 0 {
			job.OutputParallelism = 0
			job.Sink = sink.CSVParts(filepath.Join(dir, fmt.Sprintf("parts-%d", parts)), parts, sink.CSVOptions{})
		}
		return runRejecting(t, job, 97)
	}
	want := run(0)
	if want == nil || !strings.Contains(want.Error(), "reject: row ") {
		t.Fatalf("one file: %v", want)
	}
	for _, n := range []int{2, 3} {
		if got := run(n); got == nil || got.Error() != want.Error() {
			t.Fatalf("%d parts: %v, want %v", n, got, want)
		}
	}
}
