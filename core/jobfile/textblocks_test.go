package jobfile

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"streamd/core"
	"streamd/core/runtime"
	"streamd/internal/tier"
)

// textInputs returns a CSV and a JSON-lines file of the same out-of-order
// keyed records, 2.4 MB and 5.7 MB (3 and 6 blocks of 1 MiB), with malformed
// records among them (a bad int64, a wrong field count, a bare quote, a
// line that is not JSON; in the CSV file an unclosed quote, also just
// before each MiB boundary, each matched by a truncated JSON line) and,
// in the CSV file, a quoted two-line note every seventh record, so block
// thresholds fall inside quoted fields.
func textInputs() (csvText, jsonlText string) {
	var c, j strings.Builder
	c.WriteString("ts,k,v,note\n")
	rnd := rand.New(rand.NewPCG(5, 11))
	nearMiB := 0
	for i := range 110_000 {
		ts := i * 3
		if rnd.IntN(25) == 0 {
			ts = max(0, ts-rnd.IntN(900)) // out of order, some past the bound: late
		}
		switch i % 4999 {
		case 100:
			c.WriteString("7,k1,oops,x\n")
			j.WriteString("{\"ts\":7,\"k\":\"k1\",\"v\":\"oops\"}\n")
		case 200:
			c.WriteString("7,k1\n")
			j.WriteString("not json\n")
		case 300:
			c.WriteString("7,k\"1,1,x\n")
			j.WriteString("{\"ts\":7,\"k\":\"k1\"}\n")
		case 400: // an unclosed quote: it runs into the next note's quote
			c.WriteString("7,k1,1,\"open\n")
			j.WriteString("{\"ts\":7,\"k\":\"k1\n")
		}
		if mib := (c.Len() + 40) >> 20; mib > c.Len()>>20 && mib > nearMiB { // the next line ends within 40 bytes of a MiB
			nearMiB = mib
			c.WriteString("8,k2,2,\"open\n")
			j.WriteString("{\"ts\":8,\"k\":\"k2\n")
		}
		note := "plain"
		if i%7 == 0 {
			note = "\"two\nlines, \"\"quoted\"\"\""
		}
		fmt.Fprintf(&c, "%d,k%d,%d,%s\n", ts, i%17, i%100, note)
		fmt.Fprintf(&j, "{\"ts\":%d,\"k\":\"k%d\",\"v\":%d,\"note\":\"n\\n\"}\n", ts, i%17, i%100)
	}
	return c.String(), j.String()
}

// The determinism contract with CSV and JSON-lines sources read by blocks:
// a windowed keyed job with late and malformed records (on_error:
// dead_letter) gives byte-identical output and dead-letter files and the
// same counts with 1, 2, 3 and 8 source workers (source.parallelism) and
// 1, 2 and 3 channels, and the same as the single source stage (Next)
// (the whole grid in the long tier for each format; in the fast one six
// pairs across it, three for each format).
// source.parallelism: 3 gives three source workers.
func TestTextSourceWorkersSameOutput(t *testing.T) {
	csvText, jsonlText := textInputs()
	for _, kind := range []struct {
		name, file, text, spec string
		fast                   [][2]int // the fast tier's (workers, channels) pairs
	}{
		{"csv", "in.csv", csvText, "csv: {path: in.csv, columns: {ts: int64, k: string, v: int64}}", [][2]int{{1, 1}, {3, 2}, {8, 3}}},
		{"jsonl", "in.jsonl", jsonlText, "jsonl: {path: in.jsonl, fields: {ts: int64, k: string, v: int64}}", [][2]int{{2, 3}, {8, 1}, {1, 2}}},
	} {
		blocks := 0
		run := func(m, n int) (string, *runtime.Report) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, kind.file), kind.text)
			par := ""
			if m > 0 {
				par = fmt.Sprintf("  parallelism: %d\n", m)
			}
			text := "on_error: dead_letter\ndead_letter_path: dead.jsonl\nsource:\n" + par + "  " + kind.spec + "\n" +
				"event_time: {field: ts, unit: ms, max_out_of_orderness: 300ms}\n" +
				"region:\n  key_by: [k]\n  ops:\n    - window: {size: 200ms, aggregates: {n: count, s: sum(v), hi: max(v)}}\n" +
				"sink:\n  csv: {path: out.csv}\n"
			job := buildJobFile(t, dir, text, Options{Channels: n})
			sp, ok := job.Source.(core.Splittable)
			if !ok || sp.Blocks() < 3 {
				t.Fatalf("%s: %T, splittable %v, %d blocks (%d bytes)", kind.name, job.Source, ok, sp.Blocks(), len(kind.text))
			}
			if m < 0 {
				job.SourceParallelism = -1 // the single source stage
			}
			rep, err := runtime.Run(context.Background(), job)
			if err != nil {
				t.Fatalf("%s, %d workers, %d channels: %v", kind.name, m, n, err)
			}
			dead, err := os.ReadFile(filepath.Join(dir, "dead.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			out := readFile(t, filepath.Join(dir, "out.csv"))
			blocks = sp.Blocks()
			return out + "\n--- dead letters\n" + strings.ReplaceAll(string(dead), dir, "$DIR"), rep
		}
		want, wantRep := run(-1, 1)
		if wantRep.Late == 0 || wantRep.DeadLetters != 90 || wantRep.RecordsIn != 110_000 {
			t.Fatalf("%s: single source stage: %d late, %d dead letters, %d records in", kind.name, wantRep.Late, wantRep.DeadLetters, wantRep.RecordsIn)
		}
		// The fast tier runs three pairs across the grid, the long one all.
		grid := kind.fast
		if tier.Long() {
			grid = nil
			for _, m := range []int{1, 2, 3, 8} {
				for _, n := range []int{1, 2, 3} {
					grid = append(grid, [2]int{m, n})
				}
			}
		}
		for _, mn := range grid {
			{
				m, n := mn[0], mn[1]
				got, rep := run(m, n)
				workers := 0
				for _, s := range rep.Stages {
					if s.Stage == "source" {
						workers++
					}
				}
				if workers != min(m, blocks) {
					t.Errorf("%s, source.parallelism %d: %d source workers in the report, want %d", kind.name, m, workers, min(m, blocks))
				}
				if got != want || rep.Late != wantRep.Late || rep.DeadLetters != wantRep.DeadLetters || rep.RecordsIn != wantRep.RecordsIn {
					t.Fatalf("%s, %d workers, %d channels: %d late, %d dead letters, %d in (single stage %d, %d, %d); output equal: %v",
						kind.name, m, n, rep.Late, rep.DeadLetters, rep.RecordsIn, wantRep.Late, wantRep.DeadLetters, wantRep.RecordsIn, got == want)
				}
			}
		}
	}
}
