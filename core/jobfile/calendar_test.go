package jobfile

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runWindow runs a job over in.csv (ts: timestamp, k: string) with one
// window (given as its YAML mapping body) and returns its output.
func runWindow(t *testing.T, csv, window string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "in.csv"), csv)
	job := "source:\n  csv: {path: in.csv, columns: {ts: timestamp, k: string}}\n" +
		"event_time: {field: ts}\n" +
		"region:\n  key_by: [k]\n  ops:\n    - window: {" + window + ", aggregates: {n: count}}\n" +
		"sink:\n  csv: {path: out.csv}\n"
	if _, err := runJobFile(t, dir, job); err != nil {
		t.Fatal(err)
	}
	return readFile(t, filepath.Join(dir, "out.csv"))
}

// hourly writes one record per hour in [from, to) (RFC 3339 UTC).
func hourly(from, to string) string {
	var b strings.Builder
	b.WriteString("ts,k\n")
	a, _ := time.Parse(time.RFC3339, from)
	z, _ := time.Parse(time.RFC3339, to)
	for t := a; t.Before(z); t = t.Add(time.Hour) {
		fmt.Fprintf(&b, "%s,a\n", t.Format(time.RFC3339))
	}
	return b.String()
}

// A day in Europe/Paris is 23 hours on the last Sunday of March and 25 on
// the last Sunday of October: 1d windows count the hours of each local
// day, and start and end at local midnight (written in UTC).
func TestCalendarDayAcrossDST(t *testing.T) {
	// 2026-03-28 00:00 CET to 2026-03-31 00:00 CEST.
	got := runWindow(t, hourly("2026-03-27T23:00:00Z", "2026-03-30T22:00:00Z"), "size: 1d, time_zone: Europe/Paris")
	want := "window_start,window_end,k,n\n" +
		"2026-03-27T23:00:00Z,2026-03-28T23:00:00Z,a,24\n" +
		"2026-03-28T23:00:00Z,2026-03-29T22:00:00Z,a,23\n" +
		"2026-03-29T22:00:00Z,2026-03-30T22:00:00Z,a,24\n"
	if got != want {
		t.Errorf("March:\n%s\nwant\n%s", got, want)
	}
	// 2026-10-24 00:00 CEST to 2026-10-27 00:00 CET.
	got = runWindow(t, hourly("2026-10-23T22:00:00Z", "2026-10-26T23:00:00Z"), "size: 1d, time_zone: Europe/Paris")
	want = "window_start,window_end,k,n\n" +
		"2026-10-23T22:00:00Z,2026-10-24T22:00:00Z,a,24\n" +
		"2026-10-24T22:00:00Z,2026-10-25T23:00:00Z,a,25\n" +
		"2026-10-25T23:00:00Z,2026-10-26T23:00:00Z,a,24\n"
	if got != want {
		t.Errorf("October:\n%s\nwant\n%s", got, want)
	}
	// The same hours in UTC days: 24 each, whatever Paris does.
	got = runWindow(t, hourly("2026-10-24T00:00:00Z", "2026-10-26T00:00:00Z"), "size: 1d")
	want = "window_start,window_end,k,n\n" +
		"2026-10-24T00:00:00Z,2026-10-25T00:00:00Z,a,24\n" +
		"2026-10-25T00:00:00Z,2026-10-26T00:00:00Z,a,24\n"
	if got != want {
		t.Errorf("UTC:\n%s\nwant\n%s", got, want)
	}
}

// Week, month, quarter and year boundaries, a leap day, both week starts,
// a zone west of UTC, and quarters sliding by months.
func TestCalendarBoundaries(t *testing.T) {
	in := "ts,k\n" +
		"2024-01-31T23:59:59Z,a\n" + // Wednesday
		"2024-02-01T00:00:00Z,a\n" +
		"2024-02-29T12:00:00Z,a\n" + // leap day, Thursday
		"2024-03-01T00:00:00Z,a\n" +
		"2024-03-31T23:59:59.999Z,a\n" + // Sunday
		"2024-04-01T00:00:00Z,a\n" + // Monday
		"2024-12-31T23:59:59Z,a\n" + // Tuesday
		"2025-01-01T00:00:00Z,a\n"
	for _, c := range []struct{ window, want string }{
		{"size: 1mo", "" +
			"2024-01-01T00:00:00Z,2024-02-01T00:00:00Z,a,1\n" +
			"2024-02-01T00:00:00Z,2024-03-01T00:00:00Z,a,2\n" +
			"2024-03-01T00:00:00Z,2024-04-01T00:00:00Z,a,2\n" +
			"2024-04-01T00:00:00Z,2024-05-01T00:00:00Z,a,1\n" +
			"2024-12-01T00:00:00Z,2025-01-01T00:00:00Z,a,1\n" +
			"2025-01-01T00:00:00Z,2025-02-01T00:00:00Z,a,1\n"},
		{"size: 1mo, time_zone: America/New_York", "" +
			"2024-01-01T05:00:00Z,2024-02-01T05:00:00Z,a,2\n" +
			"2024-02-01T05:00:00Z,2024-03-01T05:00:00Z,a,2\n" +
			"2024-03-01T05:00:00Z,2024-04-01T04:00:00Z,a,2\n" +
			"2024-12-01T05:00:00Z,2025-01-01T05:00:00Z,a,2\n"},
		{"size: 1q", "" +
			"2024-01-01T00:00:00Z,2024-04-01T00:00:00Z,a,5\n" +
			"2024-04-01T00:00:00Z,2024-07-01T00:00:00Z,a,1\n" +
			"2024-10-01T00:00:00Z,2025-01-01T00:00:00Z,a,1\n" +
			"2025-01-01T00:00:00Z,2025-04-01T00:00:00Z,a,1\n"},
		{"size: 1y", "" +
			"2024-01-01T00:00:00Z,2025-01-01T00:00:00Z,a,7\n" +
			"2025-01-01T00:00:00Z,2026-01-01T00:00:00Z,a,1\n"},
		{"size: 1w", "" + // ISO weeks: Monday
			"2024-01-29T00:00:00Z,2024-02-05T00:00:00Z,a,2\n" +
			"2024-02-26T00:00:00Z,2024-03-04T00:00:00Z,a,2\n" +
			"2024-03-25T00:00:00Z,2024-04-01T00:00:00Z,a,1\n" +
			"2024-04-01T00:00:00Z,2024-04-08T00:00:00Z,a,1\n" +
			"2024-12-30T00:00:00Z,2025-01-06T00:00:00Z,a,2\n"},
		{"size: 1w, week_start: sunday", "" +
			"2024-01-28T00:00:00Z,2024-02-04T00:00:00Z,a,2\n" +
			"2024-02-25T00:00:00Z,2024-03-03T00:00:00Z,a,2\n" +
			"2024-03-31T00:00:00Z,2024-04-07T00:00:00Z,a,2\n" +
			"2024-12-29T00:00:00Z,2025-01-05T00:00:00Z,a,2\n"},
		{"size: 1q, slide: 1mo", "" +
			"2023-11-01T00:00:00Z,2024-02-01T00:00:00Z,a,1\n" +
			"2023-12-01T00:00:00Z,2024-03-01T00:00:00Z,a,3\n" +
			"2024-01-01T00:00:00Z,2024-04-01T00:00:00Z,a,5\n" +
			"2024-02-01T00:00:00Z,2024-05-01T00:00:00Z,a,5\n" +
			"2024-03-01T00:00:00Z,2024-06-01T00:00:00Z,a,3\n" +
			"2024-04-01T00:00:00Z,2024-07-01T00:00:00Z,a,1\n" +
			"2024-10-01T00:00:00Z,2025-01-01T00:00:00Z,a,1\n" +
			"2024-11-01T00:00:00Z,2025-02-01T00:00:00Z,a,2\n" +
			"2024-12-01T00:00:00Z,2025-03-01T00:00:00Z,a,2\n" +
			"2025-01-01T00:00:00Z,2025-04-01T00:00:00Z,a,1\n"},
		{"size: 1y, slide: 1q", "" +
			"2023-04-01T00:00:00Z,2024-04-01T00:00:00Z,a,5\n" +
			"2023-07-01T00:00:00Z,2024-07-01T00:00:00Z,a,6\n" +
			"2023-10-01T00:00:00Z,2024-10-01T00:00:00Z,a,6\n" +
			"2024-01-01T00:00:00Z,2025-01-01T00:00:00Z,a,7\n" +
			"2024-04-01T00:00:00Z,2025-04-01T00:00:00Z,a,3\n" +
			"2024-07-01T00:00:00Z,2025-07-01T00:00:00Z,a,2\n" +
			"2024-10-01T00:00:00Z,2025-10-01T00:00:00Z,a,2\n" +
			"2025-01-01T00:00:00Z,2026-01-01T00:00:00Z,a,1\n"},
	} {
		got := runWindow(t, in, c.window)
		if want := "window_start,window_end,k,n\n" + c.want; got != want {
			t.Errorf("%s:\n%s\nwant\n%s", c.window, got, want)
		}
	}
}
