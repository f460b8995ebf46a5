package jobfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"streamd/core"
	"streamd/core/plan"
	"streamd/core/runtime"
	"streamd/internal/tier"
	"streamd/snapshot"
)

// splitInputs returns three CSV files (each with its header) of keyed,
// slightly out-of-order records, about 1.3 MB each (2 blocks of 1 MiB),
// with malformed records (a bad int64, a wrong field count, a bare quote)
// and quoted two-line notes; and the same records as one file.
func splitInputs() (parts []string, whole string) {
	rnd := rand.New(rand.NewPCG(7, 3))
	const header = "ts,k,v,note\n"
	var all strings.Builder
	all.WriteString(header)
	i := 0
	for range 3 {
		var c strings.Builder
		c.WriteString(header)
		for range 40_000 {
			ts := i * 3
			if rnd.IntN(25) == 0 {
				ts = max(0, ts-rnd.IntN(900))
			}
			switch i % 4999 {
			case 100:
				c.WriteString("7,k1,oops,x\n")
			case 200:
				c.WriteString("7,k1\n")
			case 300:
				c.WriteString("7,k\"1,1,x\n")
			}
			note := "plain note padded to make blocks"
			if i%7 == 0 {
				note = "\"two\nlines, \"\"quoted\"\" too\""
			}
			fmt.Fprintf(&c, "%d,k%d,%d,%s\n", ts, i%17, i%100, note)
			i++
		}
		parts = append(parts, c.String())
		all.WriteString(strings.TrimPrefix(c.String(), header))
	}
	return parts, all.String()
}

func gz(t *testing.T, s string) string {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func zst(t *testing.T, s string) string {
	var b bytes.Buffer
	w, _ := zstd.NewWriter(&b)
	w.Write([]byte(s))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// fileJob is a windowed keyed job over source (a csv: spec), with dead
// letters, whose bound is bound.
func fileJob(source, bound string) string {
	return "on_error: dead_letter\ndead_letter_path: dead.jsonl\nsource:\n  " + source + "\n" +
		"event_time: {field: ts, unit: ms, max_out_of_orderness: " + bound + "}\n" +
		"region:\n  key_by: [k]\n  ops:\n    - window: {size: 200ms, aggregates: {n: count, s: sum(v), hi: max(v)}}\n" +
		"sink:\n  csv: {path: out.csv}\n"
}

// runFiles writes files into a fresh directory, runs job there with m
// source workers (-1: the single source stage) and n channels, and returns
// the output, the dead letters (the directory written $DIR) and the
// report.
func runFiles(t *testing.T, files map[string]string, job string, m, n int) (string, string, *runtime.Report) {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		writeFile(t, filepath.Join(dir, name), text)
	}
	j := buildJobFile(t, dir, job, Options{Channels: n, SourceParallelism: max(m, 0)})
	if m < 0 {
		j.SourceParallelism = -1
	}
	rep, err := runtime.Run(context.Background(), j)
	if err != nil {
		t.Fatalf("m=%d n=%d: %v", m, n, err)
	}
	dead, _ := os.ReadFile(filepath.Join(dir, "dead.jsonl"))
	return readFile(t, filepath.Join(dir, "out.csv")), strings.ReplaceAll(string(dead), dir, "$DIR"), rep
}

// The determinism contract over many files: three CSV files read through
// a glob, a directory or a ** pattern, plain or compressed, give
// byte-identical output, dead letters and counts for 1, 2, 3 and 8 source
// workers and 1 and 3 channels (the long tier; three pairs of them in the
// fast one) and the single source stage; and with a
// bound that makes no record late, the same output as the three files
// concatenated into one (headers dropped), with the same dead letters but
// for the file and line they name.
func TestManyFilesSameOutput(t *testing.T) {
	parts, whole := splitInputs()
	files := map[string]string{"in/a.csv": parts[0], "in/b.csv": parts[1], "in/c.csv": parts[2], "in/.hidden.csv": "junk\n"}
	gzFiles := map[string]string{"in/a.csv.gz": gz(t, parts[0]), "in/b.csv.gz": gz(t, parts[1]), "in/c.csv.zst": zst(t, parts[2])}
	deep := map[string]string{"in/2020/a.csv": parts[0], "in/2021/x/b.csv": parts[1], "in/2022/c.csv": parts[2], "in/2022/skip.txt": "x"}
	const cols = "columns: {ts: int64, k: string, v: int64}"
	glob := fileJob("csv: {path: in/*.csv, "+cols+"}", "300ms")
	want, wantDead, wantRep := runFiles(t, files, glob, -1, 1)
	if wantRep.Late == 0 || wantRep.DeadLetters != 72 || wantRep.RecordsIn != 120_000 {
		t.Fatalf("glob, single stage: %d late, %d dead letters, %d in", wantRep.Late, wantRep.DeadLetters, wantRep.RecordsIn)
	}
	if !strings.Contains(wantDead, `in/c.csv"`) {
		t.Fatalf("dead letters do not name the third file:\n%.400s", wantDead)
	}
	check := func(what string, files map[string]string, job string, m, n int) {
		t.Helper()
		got, dead, rep := runFiles(t, files, job, m, n)
		dead = strings.NewReplacer(".csv.gz:", ".csv:", ".csv.zst:", ".csv:", "/2020/", "/", "/2021/x/", "/", "/2022/", "/", ".csv.gz\"", ".csv\"", ".csv.zst\"", ".csv\"").Replace(dead)
		if got != want || dead != wantDead || rep.Late != wantRep.Late || rep.DeadLetters != wantRep.DeadLetters || rep.RecordsIn != wantRep.RecordsIn {
			t.Fatalf("%s, %d workers, %d channels: %d late, %d dead letters, %d in (want %d, %d, %d); output equal %v, dead letters equal %v\n%.300s\n%.300s",
				what, m, n, rep.Late, rep.DeadLetters, rep.RecordsIn, wantRep.Late, wantRep.DeadLetters, wantRep.RecordsIn, got == want, dead == wantDead, dead, wantDead)
		}
		if m > 0 {
			workers := 0
			for _, s := range rep.Stages {
				if s.Stage == "source" {
					workers++
				}
			}
			if workers != min(m, 6) {
				t.Errorf("%s: %d source workers, want %d", what, workers, min(m, 6))
			}
		}
	}
	// The fast tier runs three pairs of the grid, the long one all.
	grid := [][2]int{{1, 1}, {3, 3}, {8, 1}}
	if tier.Long() {
		grid = nil
		for _, m := range []int{1, 2, 3, 8} {
			for _, n := range []int{1, 3} {
				grid = append(grid, [2]int{m, n})
			}
		}
	}
	for _, mn := range grid {
		check("glob", files, glob, mn[0], mn[1])
	}
	check("directory", files, fileJob("csv: {path: in, "+cols+"}", "300ms"), 3, 1)
	check("compressed", gzFiles, fileJob("csv: {path: \"in/*.csv.*\", "+cols+"}", "300ms"), 2, 3)
	check("compressed", gzFiles, fileJob("csv: {path: \"in/*.csv.*\", "+cols+"}", "300ms"), -1, 1)
	check("**", deep, fileJob("csv: {path: \"in/**/*.csv\", "+cols+"}", "300ms"), 8, 3)

	// No record late: the glob's output is the concatenation's.
	one, oneDead, oneRep := runFiles(t, map[string]string{"all.csv": whole}, fileJob("csv: {path: all.csv, "+cols+"}", "5s"), 3, 3)
	many, manyDead, manyRep := runFiles(t, files, fileJob("csv: {path: in/*.csv, "+cols+"}", "5s"), 3, 3)
	if oneRep.Late != 0 || manyRep.Late != 0 || one != many || oneRep.DeadLetters != manyRep.DeadLetters {
		t.Fatalf("glob vs one file: %d vs %d late, %d vs %d dead letters, output equal %v", manyRep.Late, oneRep.Late, manyRep.DeadLetters, oneRep.DeadLetters, one == many)
	}
	if reasons(oneDead) != reasons(manyDead) {
		t.Fatalf("dead letters differ beyond their positions:\n%.300s\n%.300s", reasons(manyDead), reasons(oneDead))
	}
}

// reasons is dead letters without the input:line they name.
func reasons(dead string) string {
	var out []string
	for _, l := range strings.Split(dead, "\n") {
		if i := strings.Index(l, `"raw"`); i >= 0 {
			out = append(out, l[i:])
		}
	}
	return strings.Join(out, "\n")
}

// crashBlocks fails a source read by blocks at block `at`.
type crashBlocks struct {
	core.Splittable
	at int
}

var errCrash = errors.New("crash")

func (c *crashBlocks) ReadBlock(ctx context.Context, b int, errs *core.ErrorPolicy, emit func(*core.Batch) error) error {
	if b >= c.at {
		return errCrash
	}
	return c.Splittable.ReadBlock(ctx, b, errs, emit)
}

// crashNext fails a source read with Next after n batches.
type crashNext struct {
	core.Source
	n int
}

func (c *crashNext) Next(ctx context.Context) (*core.Batch, error) {
	if c.n--; c.n < 0 {
		return nil, errCrash
	}
	return c.Source.Next(ctx)
}

// A glob job killed in the middle of its second file (read by source
// workers, and by the single stage; one of the files compressed) resumes
// from its checkpoint with the output of a run that was never killed:
// exactly once. A restore after a file was added to the glob, or grew, is
// refused, naming the files.
func TestManyFilesRestore(t *testing.T) {
	parts, _ := splitInputs()
	files := map[string]string{"in/a.csv": parts[0], "in/b.csv.gz": gz(t, parts[1]), "in/c.csv": parts[2]}
	job := fileJob("csv: {path: \"in/*\", columns: {ts: int64, k: string, v: int64}}", "300ms") + "checkpoint: {dir: ck, interval: 1h}\n"
	want, wantDead, _ := runFiles(t, files, job, 2, 2)
	for _, m := range []int{-1, 3} {
		dir := t.TempDir()
		for name, text := range files {
			os.MkdirAll(filepath.Join(dir, "in"), 0o755)
			writeFile(t, filepath.Join(dir, name), text)
		}
		writeFile(t, filepath.Join(dir, "job.yaml"), job)
		f, err := Load(filepath.Join(dir, "job.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		// Crash in the second file (about 80 batches, 2 blocks a file),
		// restore from the newest checkpoint (with other channel counts),
		// and run to the end. Where the checkpoint falls depends on how far
		// the barriers got before the crash; if none was complete, start
		// over (rare with rings of 4 batches) and crash again.
		restored := false
		for attempt := 0; ; attempt++ {
			opt := Options{Channels: 2 + attempt%2, SourceParallelism: max(m, 0)}
			if restored {
				opt.Restore = "latest"
			}
			j, err := f.Build(opt)
			if err != nil {
				t.Fatalf("m=%d attempt %d: %v", m, attempt, err)
			}
			j.RingSize = 4
			j.Checkpoint.EveryBatches = 5 // counts blocks with source workers
			if m < 0 {
				j.SourceParallelism = -1
			} else {
				j.Checkpoint.EveryBatches = 1
			}
			crash := !restored && attempt < 5
			if crash && m < 0 {
				j.Source = &crashNext{Source: j.Source, n: 120}
			} else if crash {
				sp := j.Source.(core.Splittable)
				if sp.Blocks() != 6 {
					t.Fatalf("%d blocks, want 2 a file", sp.Blocks())
				}
				j.Source = &crashBlocks{Splittable: sp, at: 4}
			}
			_, err = runtime.Run(context.Background(), j)
			if !crash {
				if err != nil {
					t.Fatalf("m=%d: restored run: %v", m, err)
				}
				break
			}
			if !errors.Is(err, errCrash) {
				t.Fatalf("m=%d: the first run ended with %v, not the crash", m, err)
			}
			store, err := snapshot.Open(filepath.Join(dir, "ck"), 3, nil)
			if err != nil {
				t.Fatal(err)
			}
			if c, _, err := store.Latest(); err == nil {
				t.Logf("m=%d: restoring from %v", m, c.Meta.Sources)
				restored = true
				continue
			}
			t.Logf("m=%d attempt %d: no checkpoint before the crash; starting over", m, attempt)
			os.RemoveAll(filepath.Join(dir, "ck"))
			os.Remove(filepath.Join(dir, "dead.jsonl"))
		}
		if !restored {
			t.Fatalf("m=%d: never restored", m)
		}
		got := readFile(t, filepath.Join(dir, "out.csv"))
		if got != want {
			t.Fatalf("m=%d: restored output differs from an uncrashed run's (%d vs %d bytes)", m, len(got), len(want))
		}
		dead, _ := os.ReadFile(filepath.Join(dir, "dead.jsonl"))
		if d := strings.ReplaceAll(string(dead), dir, "$DIR"); !strings.HasSuffix(d, lastLine(wantDead)) {
			t.Fatalf("m=%d: dead letters end\n%s\nwant\n%s", m, lastLine(d), lastLine(wantDead))
		}
	}

	// The file list changed since the checkpoint: refused.
	dir := t.TempDir()
	for name, text := range files {
		os.MkdirAll(filepath.Join(dir, "in"), 0o755)
		writeFile(t, filepath.Join(dir, name), text)
	}
	writeFile(t, filepath.Join(dir, "job.yaml"), job)
	f, err := Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 0; ; attempt++ { // until a checkpoint is complete before the crash
		j, err := f.Build(Options{})
		if err != nil {
			t.Fatal(err)
		}
		j.RingSize = 4
		j.Checkpoint.EveryBatches = 5
		j.Source = &crashNext{Source: j.Source, n: 100}
		j.SourceParallelism = -1
		runtime.Run(context.Background(), j)
		store, err := snapshot.Open(filepath.Join(dir, "ck"), 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := store.Latest(); err == nil {
			break
		}
		if attempt == 20 {
			t.Fatal("no checkpoint in 20 runs")
		}
		os.RemoveAll(filepath.Join(dir, "ck"))
	}
	writeFile(t, filepath.Join(dir, "in", "d.csv"), "ts,k,v,note\n1,k,1,x\n")
	_, err = f.Build(Options{Restore: "latest"})
	if !errors.Is(err, plan.ErrCheckpointMismatch) || !strings.Contains(err.Error(), "in/d.csv") {
		t.Fatalf("restore after a file was added: %v", err)
	}
}

func lastLine(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return s[strings.LastIndex(s, "\n")+1:] + "\n"
}

// Bad file lists: a glob that matches nothing, an empty directory, a bad
// pattern and a file whose header lacks a column are errors at validate,
// naming the job file position and the file; a sink among the files a glob
// or directory names (now or later) is refused.
func TestManyFilesErrors(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "in"), 0o755)
	os.MkdirAll(filepath.Join(dir, "empty"), 0o755)
	writeFile(t, filepath.Join(dir, "in", "a.csv"), "ts,k,v\n1,a,2\n")
	writeFile(t, filepath.Join(dir, "in", "b.csv"), "ts,key,v\n1,a,2\n")
	os.MkdirAll(filepath.Join(dir, "in2"), 0o755)
	writeFile(t, filepath.Join(dir, "in2", "a.csv"), "ts,k,v\n1,a,2\n")
	os.MkdirAll(filepath.Join(dir, "out"), 0o755)
	writeFile(t, filepath.Join(dir, "out", "o.csv"), "window_start,n\n1,2\n")
	for _, tc := range []struct{ src, sink, want string }{
		{"csv: {path: \"nothing/*.csv\"}", "discard: {}", "job.yaml:2:15: source.csv.path: pattern " + filepath.Join(dir, "nothing/*.csv") + ": no files match it"},
		{"csv: {path: empty}", "discard: {}", "no files in it"},
		{"csv: {path: \"in/[.csv\"}", "discard: {}", "syntax error in pattern"},
		{"csv: {path: \"in/*.csv\", columns: {ts: int64, k: string}}", "discard: {}", "in/b.csv: no column \"k\" in the header"},
		{"csv: {path: \"in/*.csv\"}", "discard: {}", "in/b.csv: schema (ts string, key string, v string) differs from"},
		{"csv: {path: \"in/*.csv\", compression: zip}", "discard: {}", "source.csv.compression: compression \"zip\": expected one of auto, none"},
		{"csv: {path: in2}", "csv: {path: in2/out.csv}", "sink.csv.path: " + filepath.Join(dir, "in2/out.csv") + " is among the files of the input in2"},
		{"jsonl: {path: \"in2/*\", fields: {ts: int64}}", "csv: {path: in2/z.csv}", "is among the files of the input in2/*"},
		{"jsonl: {path: \"in2/*\", fields: {ts: int64}}", "csv: {path: in2/a.csv}", "in2/a.csv is an input file"},
		// An earlier run's output that the glob matches, whose header is
		// not the input's: the sink's refusal, not a header error.
		{"csv: {path: \"**/*.csv\", columns: {ts: int64, v: int64}}", "csv: {path: out/o.csv}", "job.yaml:4:15: sink.csv.path: " + filepath.Join(dir, "out/o.csv") + " is an input file"},
	} {
		err := buildText(t, dir, "source:\n  "+tc.src+"\nsink:\n  "+tc.sink+"\n", Options{Validate: true})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s → %s: %v, want %q", tc.src, tc.sink, err, tc.want)
		}
	}
}
