package jobfile

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// Timestamp columns in a strftime format, a Go layout, epoch units and
// the default forms, in column and source time zones, from CSV and JSON
// lines: the values written out (RFC 3339 UTC) are the instants meant,
// and a value that does not match is a malformed record naming its line,
// field, value and the format expected.
func TestTimestampFormats(t *testing.T) {
	for _, c := range []struct{ name, file, text, source, want, dead string }{
		{"csv", "in.csv",
			"date,at,sec,plain\n" +
				"Jan 1 2000,01/02/2000 09:30,946684800,2000-01-01 12:00:00\n" +
				"Jul 4 2026,05/07/2026 23:59,1783123200.5,2026-07-04T12:00:00+02:00\n" +
				"Jan 32 2000,01/02/2000 09:30,1,2000-01-01\n" +
				"Feb 29 2024,29/02/2024 00:00,-1.25,2024-02-29\n",
			"csv:\n    path: in.csv\n    time_zone: Europe/Paris\n    columns:\n" +
				"      date: {type: timestamp, format: \"%b %d %Y\", time_zone: America/New_York}\n" +
				"      at: {type: timestamp, format: \"02/01/2006 15:04\"}\n" +
				"      sec: {type: timestamp, unit: s}\n" +
				"      plain: timestamp\n",
			"date,at,sec,plain\n" +
				"2000-01-01T05:00:00Z,2000-02-01T08:30:00Z,2000-01-01T00:00:00Z,2000-01-01T11:00:00Z\n" +
				"2026-07-04T04:00:00Z,2026-07-05T21:59:00Z,2026-07-04T00:00:00.5Z,2026-07-04T10:00:00Z\n" +
				"2024-02-29T05:00:00Z,2024-02-28T23:00:00Z,1969-12-31T23:59:58.75Z,2024-02-28T23:00:00Z\n",
			`line 4: field "date": "Jan 32 2000" does not match format "%b %d %Y": cannot parse "%d"`},
		{"jsonl", "in.jsonl",
			`{"ms": 1700000000123, "us": "1700000000123456", "day": "14.11.2023"}` + "\n" +
				`{"ms": 1700000000123.5, "us": 1.7e15, "day": "15.11.2023"}` + "\n" +
				`{"ms": "soon", "us": 1, "day": "15.11.2023"}` + "\n" +
				`{"ms": 0, "us": 0, "day": "2023-11-15"}` + "\n",
			"jsonl:\n    path: in.jsonl\n    fields:\n" +
				"      ms: {type: timestamp, unit: ms}\n" +
				"      us: {type: timestamp, unit: us}\n" +
				"      day: {type: timestamp, format: \"%d.%m.%Y\", time_zone: Asia/Tokyo}\n",
			"ms,us,day\n" +
				"2023-11-14T22:13:20.123Z,2023-11-14T22:13:20.123456Z,2023-11-13T15:00:00Z\n" +
				"2023-11-14T22:13:20.1235Z,2023-11-14T22:13:20Z,2023-11-14T15:00:00Z\n",
			`line 3: field "ms": "soon" is not a number of milliseconds since the epoch` + "\n" +
				`line 4: field "day": "2023-11-15" does not match format "%d.%m.%Y": expected '.'`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, c.file), c.text)
			job := "on_error: dead_letter\ndead_letter_path: dead.jsonl\nsource:\n  " + c.source + "sink:\n  csv: {path: out.csv}\n"
			rep, err := runJobFile(t, dir, job)
			if err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, filepath.Join(dir, "out.csv")); got != c.want {
				t.Errorf("output\n%s\nwant\n%s", got, c.want)
			}
			var reasons []string
			for _, d := range readDeadLetters(t, filepath.Join(dir, "dead.jsonl")) {
				reasons = append(reasons, fmt.Sprintf("line %d: %s", d.Pos, d.Reason))
			}
			if got := strings.Join(reasons, "\n"); got != c.dead || rep.DeadLetters != int64(len(reasons)) {
				t.Errorf("dead letters (%d counted)\n%s\nwant\n%s", rep.DeadLetters, got, c.dead)
			}
		})
	}
}
