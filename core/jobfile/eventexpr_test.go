package jobfile

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// event_time: {expr: …} computes event time from any fields: an int64
// expression counted in unit:, or a timestamp one. A record the expression
// fails on follows on_error (here a dead letter naming the input file, the
// line and the error) and is counted, not windowed.
func TestEventTimeExpr(t *testing.T) {
	for _, c := range []struct{ name, csv, columns, eventTime, window, want, dead string }{
		{"int64 in ms",
			"sec,ms,step,k\n1,250,1000,a\n1,999,1000,a\n2,5,0,a\n2,0,1000,b\n3,500,1000,a\n",
			"{sec: int64, ms: int64, step: int64, k: string}",
			`{expr: "sec * 1000 + ms % step", unit: ms}`, "size: 1s",
			"window_start,window_end,k,n\n" +
				"1970-01-01T00:00:01Z,1970-01-01T00:00:02Z,a,2\n" +
				"1970-01-01T00:00:02Z,1970-01-01T00:00:03Z,b,1\n" +
				"1970-01-01T00:00:03Z,1970-01-01T00:00:04Z,a,1\n",
			"$DIR/in.csv line 4: event_time: sec * 1000 + ms % step: 1:17: integer divide by zero"},
		{"timestamp",
			"day,hours,k\n" + "Mar 28 2026,23,a\n" + "Mar 29 2026,1,a\n" + "Mar 29 2026,22,a\n" + "Mar 29 2026,23,a\n",
			`{day: {type: timestamp, format: "%b %d %Y", time_zone: Europe/Paris}, hours: int64, k: string}`,
			`{expr: "day + duration(\"1h\") * hours"}`, "size: 1d, time_zone: Europe/Paris",
			"window_start,window_end,k,n\n" +
				"2026-03-27T23:00:00Z,2026-03-28T23:00:00Z,a,1\n" +
				"2026-03-28T23:00:00Z,2026-03-29T22:00:00Z,a,2\n" + // 23 hours
				"2026-03-29T22:00:00Z,2026-03-30T22:00:00Z,a,1\n",
			""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "in.csv"), c.csv)
			job := "on_error: dead_letter\ndead_letter_path: dead.jsonl\n" +
				"source:\n  csv: {path: in.csv, columns: " + c.columns + "}\n" +
				"event_time: " + c.eventTime + "\n" +
				"region:\n  key_by: [k]\n  ops:\n    - window: {" + c.window + ", aggregates: {n: count}}\n" +
				"sink:\n  csv: {path: out.csv}\n"
			rep, err := runJobFile(t, dir, job)
			if err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, filepath.Join(dir, "out.csv")); got != c.want {
				t.Errorf("output\n%s\nwant\n%s", got, c.want)
			}
			var dead []string
			if c.dead == "" {
				assertMissing(t, filepath.Join(dir, "dead.jsonl"))
			} else {
				for _, d := range readDeadLetters(t, filepath.Join(dir, "dead.jsonl")) {
					dead = append(dead, fmt.Sprintf("%s line %d: %s", strings.ReplaceAll(d.Input, dir, "$DIR"), d.Pos, d.Reason))
				}
			}
			if got := strings.Join(dead, "\n"); got != c.dead || rep.DeadLetters != int64(len(dead)) {
				t.Errorf("dead letters (%d counted)\n%s\nwant\n%s", rep.DeadLetters, got, c.dead)
			}
			if rep.RecordsIn != int64(strings.Count(c.csv, "\n")-1-len(dead)) {
				t.Errorf("%d records in", rep.RecordsIn)
			}
		})
	}
}

// Under on_error: fail the first record event_time.expr fails on fails
// the job, naming the file and line.
func TestEventTimeExprFails(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "in.csv"), "sec,step,k\n1,1,a\n2,0,a\n3,1,a\n")
	job := "source:\n  csv: {path: in.csv, columns: {sec: int64, step: int64, k: string}}\n" +
		"event_time: {expr: \"sec % step\", unit: s}\n" +
		"region:\n  key_by: [k]\n  ops:\n    - window: {size: 1s, aggregates: {n: count}}\n" +
		"sink:\n  csv: {path: out.csv}\n"
	_, err := runJobFile(t, dir, job)
	want := filepath.Join(dir, "in.csv") + ":3: event_time: sec % step: 1:5: integer divide by zero"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
	assertMissing(t, filepath.Join(dir, "out.csv"))
}
