package runtime_test

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
	"streamd/core/internal/deadletter"
	"streamd/core/runtime"
	"streamd/core/source"
	"streamd/internal/tier"
	"streamd/snapshot"
)

// badCSV writes recs as a CSV file (k,v,ts) with a malformed line (v not
// an int64) before every 37th record, and returns its path, the line of
// each good record and the lines of the malformed ones.
func badCSV(t *testing.T, recs []rec) (path string, good, bad []int64) {
	t.Helper()
	var sb strings.Builder
	sb.WriteString("k,v,ts\n")
	line := int64(1)
	for i, r := range recs {
		if i%37 == 5 {
			line++
			fmt.Fprintf(&sb, "%s,oops,%d\n", r.k, r.ts)
			bad = append(bad, line)
		}
		line++
		fmt.Fprintf(&sb, "%s,%d,%d\n", r.k, r.v, r.ts)
		good = append(good, line)
	}
	path = filepath.Join(t.TempDir(), "in.csv")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, good, bad
}

// Dead letters across crashes and restores: a keyed window job over a CSV
// file with malformed lines, under on_error: dead_letter, is killed at
// random moments and restored from its newest checkpoint. Malformed lines
// before the first restored position are in the dead-letter file exactly
// once (the restored runs skip them with the policy muted); the others at
// least once and at most once per run that read them (at-least-once); each
// restored run's report counts exactly the malformed lines after its
// position; every line of the file is one JSON object; the output is the
// uncrashed run's. Sequential and parallel CSV parsing; each run with 0 to
// 3 output workers.
func TestCrashRestoreDeadLetters(t *testing.T) {
	recs := genRecords(30000, 50, 9) // 1.1 MB of CSV: parsed in parallel with parallelism 2
	want := expected(recs)
	path, good, bad := badCSV(t, recs)
	for _, parallelism := range []int{1, 2} {
		for seed := uint64(1); seed <= tier.Pick[uint64](1, 3); seed++ { // 3 in the long tier
			name := fmt.Sprintf("parallelism %d, seed %d", parallelism, seed)
			rnd := rand.New(rand.NewPCG(seed, 99))
			krnd := rand.New(rand.NewPCG(seed, 98)) // output workers, apart from the crash schedule
			store, err := snapshot.Open(t.TempDir(), 3, nil)
			if err != nil {
				t.Fatal(err)
			}
			dl := filepath.Join(t.TempDir(), "dead.jsonl")
			sink := &epochMem{}
			var restore *snapshot.Checkpoint
			first := int64(-1) // the first restored position
			runs := 0
			for attempt := 0; ; attempt++ {
				errs, _ := core.NewErrorPolicy(core.DeadLetter, dl)
				src, err := source.CSV(path, source.CSVOptions{Header: true, Parallelism: parallelism,
					Columns: []core.Field{{Name: "k", Type: core.String}, {Name: "v", Type: core.Int64}, {Name: "ts", Type: core.Timestamp}}}, errs)
				if err != nil {
					t.Fatal(err)
				}
				job, err := windowJob(nil, 1+rnd.IntN(3), sink)
				if err != nil {
					t.Fatal(err)
				}
				job.Source, job.Errors, job.RingSize = src, errs, 4
				withOutputWorkers(job, sink, krnd.IntN(4))
				job.Checkpoint = &runtime.Checkpointing{Store: store, EveryBatches: 1 + rnd.IntN(3), Restore: restore}
				if attempt < 3 {
					skipped := 0 // batches read again to skip to the position
					if restore != nil {
						skipped = int(restore.Meta.Sources["source"]/core.BatchSize) + 1
					}
					job.Source = &crashAfter{Source: src, n: skipped + 5 + rnd.IntN(25)}
				}
				rep, err := runtime.Run(context.Background(), job)
				runs++
				if restore != nil {
					// This run handled the malformed lines after its
					// position, up to where it stopped.
					pos := restore.Meta.Sources["source"]
					n := int64(0)
					for _, l := range bad {
						if pos == 0 || l > good[pos-1] {
							n++
						}
					}
					if err == nil && rep.DeadLetters != n {
						t.Fatalf("%s: the last run counted %d dead letters, want the %d after its position %d", name, rep.DeadLetters, n, pos)
					}
					if rep.DeadLetters > n {
						t.Fatalf("%s: a run restored at %d counted %d dead letters, more than the %d after its position", name, pos, rep.DeadLetters, n)
					}
				}
				if err == nil {
					break
				}
				if !errors.Is(err, errCrash) {
					t.Fatalf("%s, attempt %d: %v", name, attempt, err)
				}
				c, _, lerr := store.Latest()
				switch {
				case errors.Is(lerr, snapshot.ErrNoCheckpoint):
					// Nothing committed: start over, as a user would.
					restore, sink.parts, runs, first = nil, nil, 0, -1
					os.Remove(dl)
				case lerr != nil:
					t.Fatal(lerr)
				default:
					restore = c
					if first < 0 {
						first = c.Meta.Sources["source"]
					}
				}
			}
			if got := sink.lines(); !slices.Equal(got, want) {
				t.Fatalf("%s: output differs: %s", name, diffAt(got, want))
			}
			if first <= 0 {
				t.Fatalf("%s: never restored from a checkpoint past the start", name)
			}
			count := map[int64]int{}
			for _, p := range readLetters(t, dl) {
				count[p]++
			}
			once := 0
			for _, l := range bad {
				switch c := count[l]; {
				case l < good[first-1] && c != 1:
					t.Fatalf("%s: malformed line %d, before the first restored position (%d records, line %d), dead-lettered %d times", name, l, first, good[first-1], c)
				case c < 1 || c > runs:
					t.Fatalf("%s: malformed line %d dead-lettered %d times in %d runs", name, l, c, runs)
				case l < good[first-1]:
					once++
				}
				delete(count, l)
			}
			if len(count) != 0 {
				t.Fatalf("%s: dead letters for lines that are not malformed: %v", name, count)
			}
			t.Logf("%s: %d runs, first restore at record %d; %d malformed lines before it, each dead-lettered once", name, runs, first, once)
		}
	}
}

// readLetters reads a dead-letter file's positions, failing the test on a
// torn or malformed line.
func readLetters(t *testing.T, path string) []int64 {
	t.Helper()
	pos, err := deadletter.Positions(path)
	if err != nil {
		t.Fatal(err)
	}
	return pos
}
