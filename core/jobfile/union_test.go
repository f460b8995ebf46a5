package jobfile

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"streamd/core"
	"streamd/core/runtime"
	"streamd/internal/tier"
	"streamd/snapshot"
)

// unionJob is a windowed keyed job, late records dead-lettered, over a union of in/a.csv (2 blocks of 1 MiB) and
// the glob in/b/*.csv (two files of 2 blocks): 6 blocks interleaved as
// a0 b0 a1 b1 b2 b3, so input a is exhausted after the fourth.
func unionJob(bound string) string {
	const cols = "columns: {ts: int64, k: string, v: int64}"
	return "on_error: dead_letter\ndead_letter_path: dead.jsonl\nsource:\n  union:\n    - csv: {path: in/a.csv, " + cols + "}\n    - csv: {path: \"in/b/*.csv\", " + cols + "}\n" +
		"event_time: {field: ts, unit: ms, max_out_of_orderness: " + bound + "}\n" +
		"region:\n  key_by: [k]\n  ops:\n    - window: {size: 200ms, aggregates: {n: count, s: sum(v), hi: max(v)}, late: dead_letter}\n" +
		"sink:\n  csv: {path: out.csv}\n"
}

func unionFiles() map[string]string {
	parts, _ := splitInputs()
	return map[string]string{"in/a.csv": parts[0], "in/b/1.csv": parts[1], "in/b/2.csv": parts[2]}
}

// The determinism contract for several inputs: a union of two file
// inputs (one file, a glob of two) with out-of-order event time, late
// records, malformed records and a keyed window gives byte-identical
// output, dead letters and counts for 1 and 4 source workers and 1 and 3
// channels (4 workers and 3 channels in the fast tier); the single source
// stage gives the same output, counts and dead letters (in another order:
// see below). Its dead letters name the union input they came from.
func TestUnionSameOutput(t *testing.T) {
	files := unionFiles()
	job := unionJob("300ms")
	want, wantDead, wantRep := runFiles(t, files, job, 1, 1)
	if wantRep.Late == 0 || wantRep.DeadLetters != 72+wantRep.Late || wantRep.RecordsIn != 120_000 {
		t.Fatalf("union: %d late, %d dead letters, %d in", wantRep.Late, wantRep.DeadLetters, wantRep.RecordsIn)
	}
	for _, s := range []string{`"source":"in/a.csv"`, `"source":"in/b/*.csv"`, `"input":"$DIR/in/b/2.csv"`, `"input":"region.ops[0].window"`} {
		if !strings.Contains(wantDead, s) {
			t.Fatalf("dead letters lack %s:\n%.600s", s, wantDead)
		}
	}
	for _, mn := range tier.Pick([][2]int{{4, 3}, {-1, 3}}, [][2]int{{1, 3}, {4, 1}, {4, 3}, {-1, 3}}) {
		got, dead, rep := runFiles(t, files, job, mn[0], mn[1])
		if mn[0] < 0 {
			// The single source stage writes its malformed records as it
			// reads them, before the channels' late ones (for one file too,
			// not a union's): the same lines, another order.
			dead, wantDead := sortedLines(dead), sortedLines(wantDead)
			if dead != wantDead {
				t.Fatalf("single source stage: other dead letters")
			}
			dead = wantDead
		}
		if got != want || (mn[0] > 0 && dead != wantDead) || rep.Late != wantRep.Late || rep.DeadLetters != wantRep.DeadLetters || rep.RecordsIn != wantRep.RecordsIn {
			t.Fatalf("%d workers, %d channels: %d late, %d dead letters (want %d, %d); output equal %v, dead letters equal %v",
				mn[0], mn[1], rep.Late, rep.DeadLetters, wantRep.Late, wantRep.DeadLetters, got == want, dead == wantDead)
		}
	}
}

// smallFiles writes n CSV files of k records each (each file one block),
// keyed, out of order within 400 ms, with a malformed record in each,
// starting at event time t0 ms.
func smallFiles(rnd *rand.Rand, prefix string, n, k, t0 int) map[string]string {
	out := map[string]string{}
	ts := t0
	for f := range n {
		var b strings.Builder
		b.WriteString("ts,k,v\n")
		for i := range k {
			if i == k/2 {
				fmt.Fprintf(&b, "%d,k1,bad\n", ts)
			}
			fmt.Fprintf(&b, "%d,k%d,%d\n", max(0, ts-rnd.IntN(400)), i%5, i)
			ts += 7
		}
		out[fmt.Sprintf("%s/%d.csv", prefix, f)] = b.String()
	}
	return out
}

// With a bound that makes no record late, a union's output is that of one
// file holding the same records in interleave order: a glob's files are
// one block each, so the interleave of in/a (3 files) and in/b (2 files)
// is a/0 b/0 a/1 b/1 a/2. The dead letters name the same records.
func TestUnionEqualsInterleavedFile(t *testing.T) {
	rnd := rand.New(rand.NewPCG(16, 1))
	files := smallFiles(rnd, "in/a", 3, 300, 0)
	for k, v := range smallFiles(rnd, "in/b", 2, 300, 1000) {
		files[k] = v
	}
	var whole strings.Builder
	whole.WriteString("ts,k,v\n")
	for _, name := range []string{"in/a/0.csv", "in/b/0.csv", "in/a/1.csv", "in/b/1.csv", "in/a/2.csv"} {
		whole.WriteString(strings.TrimPrefix(files[name], "ts,k,v\n"))
	}
	const cols = "columns: {ts: int64, k: string, v: int64}"
	union := fileJob("union:\n    - csv: {path: \"in/a/*.csv\", "+cols+"}\n    - csv: {path: \"in/b/*.csv\", "+cols+"}", "10s")
	got, gotDead, gotRep := runFiles(t, files, union, 4, 3)
	one, oneDead, oneRep := runFiles(t, map[string]string{"all.csv": whole.String()}, fileJob("csv: {path: all.csv, "+cols+"}", "10s"), 1, 1)
	if gotRep.Late != 0 || oneRep.Late != 0 || gotRep.RecordsIn != 1500 || gotRep.DeadLetters != 5 || oneRep.DeadLetters != 5 {
		t.Fatalf("union: %d late, %d in, %d dead; one file: %d late, %d dead", gotRep.Late, gotRep.RecordsIn, gotRep.DeadLetters, oneRep.Late, oneRep.DeadLetters)
	}
	if got != one {
		t.Fatalf("union output differs from the interleaved file's:\n%.400s\n%.400s", got, one)
	}
	if r, w := records(gotDead), records(oneDead); r != w {
		t.Fatalf("dead letters name other records, or another order:\n%s\n%s", r, w)
	}
}

func sortedLines(s string) string {
	l := strings.Split(s, "\n")
	slices.Sort(l)
	return strings.Join(l, "\n")
}

// records is the "record" of each dead letter, in order.
func records(dead string) string {
	var out []string
	for _, l := range strings.Split(dead, "\n") {
		if i := strings.Index(l, `"record":`); i >= 0 {
			out = append(out, strings.TrimSuffix(strings.SplitN(l[i:], ",\"source\"", 2)[0], "}"))
		}
	}
	return strings.Join(out, "\n")
}

// Per-input watermarks, a worked example. The interleave is a/0 b/0 a/1
// b/1 b/2 (one batch each), bound 0, windows of 1 s, key k:
//
//	a/0: 1000 1100 … 1900   a: 1900          wm none (b has no time yet)
//	b/0: 0 100 … 900        b: 900           wm min(1900, 900) − 1 = 899
//	a/1: 2000 … 2900        a: 2900          wm 899
//	b/1: 950 1500           b: 1500          wm 1499: [0 s, 1 s) fires with 11
//	b/2: 700 2950           b: 2950          700 is late; a is exhausted, so
//	                                         wm = 2949: [1 s, 2 s) fires with 11
//
// and the end fires [2 s, 3 s) with 11. One watermark for the whole union
// (its largest event time) would have made all of b/0 late after a/0.
func TestUnionPerInputWatermarks(t *testing.T) {
	seq := func(from, to, step int) string {
		var b strings.Builder
		b.WriteString("ts,k\n")
		for ts := from; ts <= to; ts += step {
			fmt.Fprintf(&b, "%d,k\n", ts)
		}
		return b.String()
	}
	files := map[string]string{
		"in/a/0.csv": seq(1000, 1900, 100), "in/a/1.csv": seq(2000, 2900, 100),
		"in/b/0.csv": seq(0, 900, 100), "in/b/1.csv": "ts,k\n950,k\n1500,k\n", "in/b/2.csv": "ts,k\n700,k\n2950,k\n",
	}
	job := unionWindowJob
	const want = "window_start,window_end,k,n\n" +
		"1970-01-01T00:00:00Z,1970-01-01T00:00:01Z,k,11\n" +
		"1970-01-01T00:00:01Z,1970-01-01T00:00:02Z,k,11\n" +
		"1970-01-01T00:00:02Z,1970-01-01T00:00:03Z,k,11\n"
	const wantDead = `{"input":"region.ops[0].window","pos":2,"reason":"late: its windows have fired","record":"700,k","source":"in/b/*.csv"}` + "\n"
	for _, mn := range [][2]int{{-1, 1}, {1, 1}, {4, 3}} {
		got, dead, rep := runFiles(t, files, job, mn[0], mn[1])
		if mn[0] < 0 {
			// The single source stage writes its malformed records as it
			// reads them, before the channels' late ones (for one file too,
			// not a union's): the same lines, another order.
			dead, wantDead := sortedLines(dead), sortedLines(wantDead)
			if dead != wantDead {
				t.Fatalf("single source stage: other dead letters")
			}
			dead = wantDead
		}
		if got != want || (mn[0] > 0 && dead != wantDead) || rep.Late != 1 {
			t.Fatalf("%d workers, %d channels: %d late\n%s\nwant\n%s\ndead letters\n%swant\n%s", mn[0], mn[1], rep.Late, got, want, dead, wantDead)
		}
	}
}

// An input that has run out leaves the union's watermark (align.Inputs:
// an ended input drops out). The interleave is a/0 b/0 b/1 b/2, bound 0,
// windows of 1 s:
//
//	a/0: 1000 … 1900   a: 1900   wm none (b has no time yet)
//	b/0: 0 … 900       b: 900    wm 899
//	b/1: 2500          b: 2500   a is exhausted: wm 2499, [0 s, 1 s) and
//	                             [1 s, 2 s) fire with 10 each
//	b/2: 1950                    late
//
// Had a stayed in the minimum the watermark would be 1899 and 1950 on
// time.
func TestUnionExhaustedInputDropsOut(t *testing.T) {
	seq := unionCSV
	var a0, b0 []int
	for ts := range 10 {
		a0, b0 = append(a0, 1000+100*ts), append(b0, 100*ts)
	}
	files := map[string]string{"in/a/0.csv": seq(a0...), "in/b/0.csv": seq(b0...), "in/b/1.csv": seq(2500), "in/b/2.csv": seq(1950)}
	job := unionWindowJob
	const want = "window_start,window_end,k,n\n" +
		"1970-01-01T00:00:00Z,1970-01-01T00:00:01Z,k,10\n" +
		"1970-01-01T00:00:01Z,1970-01-01T00:00:02Z,k,10\n" +
		"1970-01-01T00:00:02Z,1970-01-01T00:00:03Z,k,1\n"
	for _, mn := range [][2]int{{-1, 1}, {1, 1}, {2, 3}} {
		got, _, rep := runFiles(t, files, job, mn[0], mn[1])
		if got != want || rep.Late != 1 {
			t.Fatalf("%d workers, %d channels: %d late\n%s\nwant\n%s", mn[0], mn[1], rep.Late, got, want)
		}
	}
}

// crashUnion fails a union read by blocks at block at, and keeps it a
// union (core.Interleaved), so that the run keeps its per-input
// watermarks.
type crashUnion struct {
	core.Interleaved
	at int
}

func (c *crashUnion) ReadBlock(ctx context.Context, b int, errs *core.ErrorPolicy, emit func(*core.Batch) error) error {
	if b >= c.at {
		return errCrash
	}
	return c.Interleaved.ReadBlock(ctx, b, errs, emit)
}

// crashUnionNext fails a union read with Next after n batches.
type crashUnionNext struct {
	core.Interleaved
	n int
}

func (c *crashUnionNext) Next(ctx context.Context) (*core.Batch, error) {
	if c.n--; c.n < 0 {
		return nil, errCrash
	}
	return c.Interleaved.Next(ctx)
}

// A union job killed in its fifth block (read by source workers, and
// after its 150th batch by the single source stage) resumes from its
// newest checkpoint, with other channel counts, and gives the output and
// the dead letters of a run that was never killed: exactly once, per-input
// watermark state included.
func TestUnionRestore(t *testing.T) {
	files := unionFiles()
	job := unionJob("300ms") + "checkpoint: {dir: ck, interval: 1h}\n"
	want, wantDead, _ := runFiles(t, files, job, 2, 2)
	for _, m := range []int{-1, 3} {
		dir := t.TempDir()
		for name, text := range files {
			writeFile(t, filepath.Join(dir, name), text)
		}
		writeFile(t, filepath.Join(dir, "job.yaml"), job)
		f, err := Load(filepath.Join(dir, "job.yaml"))
		if err != nil {
			t.Fatal(err)
		}
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
			j.Checkpoint.EveryBatches = 1 // counts blocks with source workers
			if m < 0 {
				j.SourceParallelism = -1
				j.Checkpoint.EveryBatches = 5
			}
			crash := !restored && attempt < 5
			u := j.Source.(core.Interleaved)
			if crash && m < 0 {
				j.Source = &crashUnionNext{Interleaved: u, n: 150}
			} else if crash {
				if u.Blocks() != 6 {
					t.Fatalf("%d blocks, want 6", u.Blocks())
				}
				j.Source = &crashUnion{Interleaved: u, at: 4}
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
				if c.Meta.Extra["max_event_times"] == "" {
					t.Fatalf("m=%d: the checkpoint records no per-input event times: %v", m, c.Meta.Extra)
				}
				t.Logf("m=%d: restoring from %v, event times %s", m, c.Meta.Sources, c.Meta.Extra["max_event_times"])
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
		if got := readFile(t, filepath.Join(dir, "out.csv")); got != want {
			t.Fatalf("m=%d: restored output differs from an uncrashed run's (%d vs %d bytes)", m, len(got), len(want))
		}
		dead, _ := os.ReadFile(filepath.Join(dir, "dead.jsonl"))
		if d := strings.ReplaceAll(string(dead), dir, "$DIR"); !strings.HasSuffix(d, lastLine(wantDead)) {
			t.Fatalf("m=%d: dead letters end\n%s\nwant\n%s", m, lastLine(d), lastLine(wantDead))
		}
	}
}

// Bad unions are errors at line:column: inputs of other schemas (naming
// both inputs and the field), an unknown kind inside, standard input, a
// union inside a union, parallelism on an input, an empty list, a
// rate-limited generator.
func TestUnionErrors(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.csv"), "ts,k,v\n1,a,2\n")
	writeFile(t, filepath.Join(dir, "b.csv"), "ts,k,v\n1,a,2\n")
	writeFile(t, filepath.Join(dir, "c.csv"), "ts,key,v\n1,a,2\n")
	const a = "{csv: {path: a.csv, columns: {ts: int64, k: string, v: int64}}}"
	for _, tc := range []struct{ entries, want string }{
		{a + ", {csv: {path: b.csv, columns: {ts: int64, k: string, v: float64}}}",
			`job.yaml:2:77: source.union[1]: field 3: input b.csv has "v" float64, input a.csv has "v" int64: the inputs of a union must have the same fields`},
		{a + ", {csv: {path: c.csv, columns: {ts: int64, key: string, v: int64}}}", `field 2: input c.csv has "key" string, input a.csv has "k" string`},
		{a + ", {csv: {path: b.csv, columns: {ts: int64}}}", "input b.csv has 1 fields and input a.csv has 3"},
		{a + ", {kafka: {topic: t}}", `job.yaml:2:77: unknown field "kafka" (expected one of parallelism, parquet, csv, jsonl, json, stdin, generator, union)`},
		{a + ", {stdin: {format: csv}}", "job.yaml:2:77: source.union[1].stdin: stdin cannot join a union"},
		{a + ", {union: [" + a + "]}", "job.yaml:2:77: source.union[1].union: a union cannot hold a union"},
		{a + ", {parallelism: 2, csv: {path: b.csv}}", "job.yaml:2:90: source.union[1].parallelism: parallelism is the union's"},
		{a + ", {csv: {path: d.csv}}", "job.yaml:2:89: source.union[1].csv.path: csv source: open"},
		{"", "job.yaml:2:3: source.union: a union needs a list of one source or more"},
		{a + ", {generator: {count: 10, rate: 5}}", "source.union[1]: input union[1] cannot be read by blocks"},
	} {
		err := buildText(t, dir, "source:\n  union: ["+tc.entries+"]\nsink:\n  discard: {}\n", Options{Validate: true})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n%v\nwant %q", tc.entries, err, tc.want)
		}
	}
}

// streamd validate promises the strong contract for a union of files, and
// determinism: strong accepts it.
func TestUnionPromise(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.csv"), "ts,k\n1,a\n")
	writeFile(t, filepath.Join(dir, "b.csv"), "ts,k\n2,b\n")
	text := "determinism: strong\nsource:\n  union:\n    - csv: {path: a.csv}\n    - csv: {path: b.csv}\nsink:\n  discard: {}\n"
	writeFile(t, filepath.Join(dir, "job.yaml"), text)
	f, err := Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Build(Options{Validate: true}); err != nil {
		t.Fatalf("determinism: strong refused a union of files: %v", err)
	}
	if p := f.Promise(); !p.Strong() || !strings.HasPrefix(p.String(), "determinism: strong") {
		t.Fatalf("promise %q", p)
	}
}

// unionWindowJob is the job of the union watermark tests: a union of the
// CSV files in/a/*.csv and in/b/*.csv (ts in ms, k), 1-second windows
// counting per k with no out-of-orderness, late records dead-lettered.
const unionWindowJob = "on_error: dead_letter\ndead_letter_path: dead.jsonl\nsource:\n  union:\n" +
	"    - csv: {path: \"in/a/*.csv\", columns: {ts: int64, k: string}}\n" +
	"    - csv: {path: \"in/b/*.csv\", columns: {ts: int64, k: string}}\n" +
	"event_time: {field: ts, unit: ms, max_out_of_orderness: 0s}\n" +
	"region:\n  key_by: [k]\n  ops:\n    - window: {size: 1s, aggregates: {n: count}, late: dead_letter}\nsink:\n  csv: {path: out.csv}\n"

// unionCSV is a CSV file of the union tests: a header and one record of
// key k per time in ts (ms).
func unionCSV(ts ...int) string {
	var b strings.Builder
	b.WriteString("ts,k\n")
	for _, x := range ts {
		fmt.Fprintf(&b, "%d,k\n", x)
	}
	return b.String()
}
