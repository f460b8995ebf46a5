package jobfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"streamd/core"
	"streamd/core/runtime"
	"streamd/internal/tier"
)

// openQuoteCSV returns a CSV file of 300,000 records (ts = i ms, k = k<i
// mod 13>, v = i mod 100), whose record 200,000 (line 200,002) opens a
// quoted field it never closes; nothing after it has a quote.
func openQuoteCSV() string {
	var b strings.Builder
	b.WriteString("ts,k,v\n")
	for i := range 300_000 {
		if i == 200_000 {
			fmt.Fprintf(&b, "%d,k%d,\"%d\n", i, i%13, i%100)
			continue
		}
		fmt.Fprintf(&b, "%d,k%d,%d\n", i, i%13, i%100)
	}
	return b.String()
}

// The 300,000-line file with one unclosed quote: under skip and
// dead_letter exactly that record is lost (299,999 records read, 1
// skipped or dead-lettered, every window's count adds up to 299,999), its
// dead letter names its line and holds its text; under fail the error
// names the line the quote opened on. The output is byte-identical for
// source parallelism 1, 2, 3 and 8 with 1 and 3 channels and for the single
// source stage (the fast tier runs two pairs of the grid, the long tier
// all eight). Before the fix the quoted field swallowed the other 99,999
// records as one malformed record, exit 0.
func TestCSVUnclosedQuoteLosesOneRecord(t *testing.T) {
	text := openQuoteCSV()
	run := func(t *testing.T, mode string, m, n int, extra string) (string, *runtime.Report, error) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "in.csv"), text)
		par := ""
		if m > 0 {
			par = fmt.Sprintf("  parallelism: %d\n", m)
		}
		job := "on_error: " + mode + "\ndead_letter_path: dead.jsonl\nsource:\n" + par +
			"  csv: {path: in.csv, columns: {ts: int64, k: string, v: int64}" + extra + "}\n" +
			"event_time: {field: ts, unit: ms}\n" +
			"region:\n  key_by: [k]\n  ops:\n    - window: {size: 10s, aggregates: {n: count, s: sum(v)}}\n" +
			"sink:\n  csv: {path: out.csv}\n"
		j := buildJobFile(t, dir, job, Options{Channels: n})
		if m < 0 {
			j.SourceParallelism = -1 // the single source stage
		}
		rep, err := runtime.Run(context.Background(), j)
		if err != nil {
			return "", rep, err
		}
		out := readFile(t, filepath.Join(dir, "out.csv"))
		if dead, err := os.ReadFile(filepath.Join(dir, "dead.jsonl")); err == nil {
			out += "\n--- dead letters\n" + strings.ReplaceAll(string(dead), dir, "$DIR")
		}
		return out, rep, nil
	}
	check := func(t *testing.T, mode string, out string, rep *runtime.Report) {
		t.Helper()
		lost := rep.Skipped + rep.DeadLetters
		if rep.RecordsIn != 299_999 || lost != 1 || (mode == "skip") != (rep.Skipped == 1) {
			t.Fatalf("%s: %d records in, %d skipped, %d dead letters; want 299999 in and exactly the one record lost", mode, rep.RecordsIn, rep.Skipped, rep.DeadLetters)
		}
		var sum int64
		for l := range strings.Lines(out) {
			if strings.HasPrefix(l, "---") {
				break
			}
			f := strings.Split(strings.TrimSpace(l), ",")
			if len(f) < 2 {
				continue
			}
			var c int64
			if _, err := fmt.Sscan(f[len(f)-2], &c); err == nil {
				sum += c
			}
		}
		if sum != 299_999 {
			t.Fatalf("%s: the windows count %d records, want 299999", mode, sum)
		}
	}
	const reason = `"pos":200002,"reason":"unclosed quote: the quoted field opened on line 200002 spans more than 10000 lines (max_quoted_lines); reading resumes on line 200003 (record text cut to its first 4096 bytes)","record":"200000,k8,\"0\n200001,k9,1\n`

	want, wantRep, err := run(t, "dead_letter", -1, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	check(t, "dead_letter", want, wantRep)
	if !strings.Contains(want, reason) {
		t.Fatalf("dead letter:\n%.600s\nwant it to hold %s", want[strings.Index(want, "---"):], reason)
	}
	grid := [][2]int{{2, 3}, {8, 1}} // the fast tier; the long one runs the whole grid
	if tier.Long() {
		grid = nil
		for _, m := range []int{1, 2, 3, 8} {
			for _, n := range []int{1, 3} {
				grid = append(grid, [2]int{m, n})
			}
		}
	}
	for _, mn := range grid {
		got, rep, err := run(t, "dead_letter", mn[0], mn[1], "")
		if err != nil {
			t.Fatal(err)
		}
		if got != want || rep.RecordsIn != wantRep.RecordsIn || rep.DeadLetters != 1 {
			t.Fatalf("dead_letter, %d workers, %d channels: %d in, %d dead letters; output equal to the single stage's: %v", mn[0], mn[1], rep.RecordsIn, rep.DeadLetters, got == want)
		}
	}
	wantOut, _, _ := strings.Cut(want, "\n--- dead letters\n")
	for _, mn := range [][2]int{{3, 3}} {
		got, rep, err := run(t, "skip", mn[0], mn[1], "")
		if err != nil {
			t.Fatal(err)
		}
		check(t, "skip", got, rep)
		if got != wantOut {
			t.Fatalf("skip, %d workers, %d channels: output differs from dead_letter's", mn[0], mn[1])
		}
	}
	for _, mn := range [][2]int{{-1, 1}, {8, 1}} {
		_, _, err := run(t, "fail", mn[0], mn[1], "")
		var re *core.RecordError
		if !errors.As(err, &re) || re.Pos != 200_002 || !strings.HasSuffix(re.Input, "in.csv") ||
			!strings.HasPrefix(re.Reason.Error(), "unclosed quote: the quoted field opened on line 200002 ") {
			t.Fatalf("fail, %d workers: %v (%T)", mn[0], err, err)
		}
	}
	// The limits as keys: max_quoted_lines 50 finds it sooner, with the
	// same records.
	got, rep, err := run(t, "dead_letter", 3, 3, ", max_quoted_lines: 50, max_quoted_bytes: 4096")
	if err != nil {
		t.Fatal(err)
	}
	check(t, "dead_letter", got, rep)
	if gotOut, _, _ := strings.Cut(got, "\n--- dead letters\n"); gotOut != wantOut || !strings.Contains(got, "spans more than 50 lines (max_quoted_lines)") {
		t.Fatalf("max_quoted_lines 50: output equal %v; dead letters %.600s", gotOut == wantOut, got[strings.Index(got, "---"):])
	}
}
