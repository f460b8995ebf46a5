package jobfile

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"streamd/core"
	"streamd/core/runtime"
)

// aheadInput is a reported case: 521 flights of origin a, one a
// minute from midnight, with one record a day ahead (line 102, the 101st
// record) among the first batch's; the second batch (512 records a batch)
// holds the last 10 on-time records.
func aheadInput() string {
	var b strings.Builder
	b.WriteString("ts,k\n")
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for m := range 521 {
		if m == 100 {
			fmt.Fprintf(&b, "%s,a\n", t0.Add(24*time.Hour).Format(time.RFC3339))
		}
		fmt.Fprintf(&b, "%s,a\n", t0.Add(time.Duration(m)*time.Minute).Format(time.RFC3339))
	}
	return b.String()
}

// event_time.max_ahead: after a record a day ahead, the 10 on-time records
// of the next batch are kept (without it, all 10 are late and their window
// loses them); the outlier is dead-lettered with its reason and counted,
// does not move the watermark, and fails the job under on_error: fail,
// named by its line. The output is the same with the single source stage
// and with 1, 2, 3, 8 source workers and 1 or 3 channels.
func TestMaxAheadKeepsOnTimeRecords(t *testing.T) {
	run := func(t *testing.T, mode, ahead string, m, n int) (string, *runtime.Report, error) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "in.csv"), aheadInput())
		par := ""
		if m > 0 {
			par = fmt.Sprintf("  parallelism: %d\n", m)
		}
		text := "on_error: " + mode + "\ndead_letter_path: dead.jsonl\nsource:\n" + par +
			"  csv: {path: in.csv, columns: {ts: timestamp, k: string}}\n" +
			"event_time: {field: ts, max_out_of_orderness: 1m" + ahead + "}\n" +
			"region:\n  key_by: [k]\n  ops:\n    - window: {size: 1h, aggregates: {n: count}}\n" +
			"sink:\n  csv: {path: out.csv}\n"
		j := buildJobFile(t, dir, text, Options{Channels: n})
		if m < 0 {
			j.SourceParallelism = -1
		}
		rep, err := runtime.Run(context.Background(), j)
		if err != nil {
			return "", rep, err
		}
		out := readFile(t, filepath.Join(dir, "out.csv"))
		if mode == "dead_letter" {
			out += "--- dead letters\n" + strings.ReplaceAll(readFile(t, filepath.Join(dir, "dead.jsonl")), dir, "$DIR")
		}
		return out, rep, nil
	}
	hours := "window_start,window_end,k,n\n"
	for h := range 9 {
		n := 60
		if h == 8 {
			n = 41 // minutes 480 … 520
		}
		hours += fmt.Sprintf("2024-01-01T%02d:00:00Z,2024-01-01T%02d:00:00Z,a,%d\n", h, h+1, n)
	}
	letter := `{"input":"$DIR/in.csv","pos":102,"reason":"event_time: 2024-01-02T00:00:00Z is 19h45m0s ahead of its batch (at 2024-01-01T04:15:00Z), more than max_ahead 1h0m0s","record":"2024-01-02T00:00:00Z,a"}` + "\n"

	// The problem: without max_ahead the record a day ahead makes the 10
	// on-time records of the next batch late.
	out, rep, err := run(t, "skip", "", -1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Late != 10 || strings.Contains(out, ",a,41\n") {
		t.Fatalf("without max_ahead: %d late, want 10; output\n%s", rep.Late, out)
	}

	want := hours + "--- dead letters\n" + letter
	for _, mn := range [][2]int{{-1, 1}, {1, 1}, {2, 3}, {3, 1}, {8, 3}} {
		got, rep, err := run(t, "dead_letter", ", max_ahead: 1h", mn[0], mn[1])
		if err != nil {
			t.Fatal(err)
		}
		if got != want || rep.Late != 0 || rep.DeadLetters != 1 || rep.RecordsIn != 521 {
			t.Fatalf("%d workers, %d channels: %d late, %d dead letters, %d in; output\n%s\nwant\n%s", mn[0], mn[1], rep.Late, rep.DeadLetters, rep.RecordsIn, got, want)
		}
	}
	got, rep, err := run(t, "skip", ", max_ahead: 1h", 3, 3)
	if err != nil || got != hours || rep.Skipped != 1 || rep.Late != 0 {
		t.Fatalf("skip: %v, %d skipped, %d late; output\n%s", err, rep.Skipped, rep.Late, got)
	}
	for _, m := range []int{-1, 2} {
		_, _, err := run(t, "fail", ", max_ahead: 1h", m, 1)
		var re *core.RecordError
		if !errors.As(err, &re) || re.Pos != 102 || !strings.HasPrefix(re.Reason.Error(), "event_time: 2024-01-02T00:00:00Z is 19h45m0s ahead") {
			t.Fatalf("fail, %d workers: %v", m, err)
		}
	}
}
