package jobfile

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCSVParallelismSameOutput runs one job over a 2 MB CSV file (every
// third record spans two lines) with malformed records (a bad int64, a
// wrong field count, a bare quote late in the file) with
// source.csv.parallelism 1, 3 and auto, under each on_error policy: the
// output file, the report's counts, the dead letters and the error must
// not depend on the parallelism.
func TestCSVParallelismSameOutput(t *testing.T) {
	var in strings.Builder
	in.WriteString("ts,origin,delay\n")
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 60000 {
		switch i {
		case 20000:
			in.WriteString("2024-01-01T00:00:00Z,SFO,abc\n")
		case 30000:
			in.WriteString("2024-01-01T00:00:00Z,SFO\n")
		case 50000:
			in.WriteString("2024-01-01T00:00:00Z,S\"FO,1\n")
		}
		fmt.Fprintf(&in, "%s,\"%s\",%d\n", t0.Add(time.Duration(i)*time.Second).Format(time.RFC3339), []string{"SFO", "LAX", "A\"\"B\nC"}[i%3], i%11)
	}
	type result struct {
		out, dead, err string
		in, recOut     int64
		skipped        int64
		deadLetters    int64
	}
	for _, policy := range []string{"fail", "skip", "dead_letter"} {
		var want result
		for i, par := range []string{"1", "3", "0"} {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "in"), in.String())
			job := fmt.Sprintf("on_error: %s\ndead_letter_path: dead.jsonl\nsource:\n  csv:\n    path: in\n    parallelism: %s\n"+
				"    columns: {ts: timestamp, origin: string, delay: int64}\npipeline:\n  - filter: delay > 3\nsink:\n  csv:\n    path: out/out.csv\n", policy, par)
			rep, err := runJobFile(t, dir, job)
			var got result
			if err != nil {
				got.err = strings.ReplaceAll(err.Error(), dir, "$DIR")
			} else {
				got.out = readFile(t, filepath.Join(dir, "out", "out.csv"))
				got.in, got.recOut, got.skipped, got.deadLetters = rep.RecordsIn, rep.RecordsOut, rep.Skipped, rep.DeadLetters
			}
			if d, err := os.ReadFile(filepath.Join(dir, "dead.jsonl")); err == nil {
				got.dead = strings.ReplaceAll(string(d), dir, "$DIR")
			}
			if i == 0 {
				want = got
				continue
			}
			if got != want {
				t.Errorf("%s, parallelism %s: %d in, %d out, %d skipped, %d dead letters, error %q, dead letters %q; parallelism 1: %d, %d, %d, %d, %q, %q",
					policy, par, got.in, got.recOut, got.skipped, got.deadLetters, got.err, got.dead, want.in, want.recOut, want.skipped, want.deadLetters, want.err, want.dead)
			}
		}
		if policy == "fail" && !strings.Contains(want.err, "in:26668:") || policy != "fail" && want.in != 60000 {
			t.Errorf("%s: %+v", policy, want)
		}
	}
}

// Where the source's batches end decides where the watermark moves, so
// which out-of-order records are late and which windows they fall in: a
// windowed job over out-of-order records, with malformed ones among them,
// gives the same windows and late count with any parallelism.
func TestCSVParallelismSameWindows(t *testing.T) {
	var in strings.Builder
	in.WriteString("ts,k,v\n")
	rnd := rand.New(rand.NewPCG(9, 9))
	for i := range 120000 {
		ts := i
		if rnd.IntN(20) == 0 {
			ts = max(0, i-rnd.IntN(2000)) // out of order, up to 2 s
		}
		if i%9001 == 0 {
			in.WriteString("oops,k1,1\n") // malformed: ends a worker's batch
		}
		fmt.Fprintf(&in, "%d,k%d,%d\n", ts, i%13, i%100)
	}
	var want string
	var wantLate int64
	for i, par := range []string{"1", "3", "0"} {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "in"), in.String())
		job := "on_error: skip\nsource:\n  csv: {path: in, parallelism: " + par + ", columns: {ts: int64, k: string, v: int64}}\n" +
			"event_time: {field: ts, unit: ms}\nregion:\n  key_by: [k]\n  ops:\n    - window: {size: 100ms, aggregates: {n: count, s: sum(v)}}\n" +
			"sink:\n  csv: {path: out.csv}\n"
		rep, err := runJobFile(t, dir, job)
		if err != nil {
			t.Fatal(err)
		}
		got := readFile(t, filepath.Join(dir, "out.csv"))
		if i == 0 {
			want, wantLate = got, rep.Late
			if wantLate == 0 || rep.Skipped != 14 {
				t.Fatalf("parallelism 1: %d late, %d skipped; the input should have both", rep.Late, rep.Skipped)
			}
			continue
		}
		if got != want || rep.Late != wantLate {
			t.Errorf("parallelism %s: %d late (parallelism 1: %d), output equal: %v", par, rep.Late, wantLate, got == want)
		}
	}
}
