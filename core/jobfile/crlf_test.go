package jobfile

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// crlfCSV is a CSV file with CRLF record ends whose quoted notes hold line
// breaks: a CRLF, a bare LF, a CR before a CRLF, an escaped quote before a
// CRLF, and a CRLF as the last record's last bytes. 100,000 "plain"
// records among them make it 1.3 MB: several blocks for the parallel
// parser (256 KiB) and two for source workers (1 MiB), with a quoted CRLF
// in each.
func crlfCSV() string {
	var b strings.Builder
	b.WriteString("id,note\r\n" +
		"1,\"a\r\nb\"\r\n" +
		"2,\"c\nd\"\r\n" +
		"3,\"e\r\r\nf\"\n")
	for i := 4; i < 100_004; i++ {
		if i == 50_000 {
			b.WriteString("50000,\"mid\r\ndle\"\r\n")
			continue
		}
		fmt.Fprintf(&b, "%d,plain\r\n", i)
	}
	b.WriteString("100004,\"say \"\"hi\"\"\r\nthere\"\r\n" +
		"100005,\"g\r\n\"")
	return b.String()
}

// A CRLF inside a quoted CSV field is part of the value (RFC 4180) and
// goes through a job byte for byte, where the CRLF that ends a record does
// not: the CSV sink writes the value quoted with its CRLF (records end
// with "\n"), the JSON-lines sink writes it as "\r\n", and a bare LF stays
// a bare LF. The same with the sequential reader (csv parallelism 1), the
// parallel parser (3) and source workers reading blocks (a region with
// source parallelism 3). The CSV output read back by a job gives the same
// CSV and JSON lines again. Before the fix every quoted CRLF came out as
// LF.
func TestCSVQuotedCRLFThroughJob(t *testing.T) {
	const wantCSV = "id,note\n" +
		"1,\"a\r\nb\"\n" +
		"2,\"c\nd\"\n" +
		"3,\"e\r\r\nf\"\n" +
		"50000,\"mid\r\ndle\"\n" +
		"100004,\"say \"\"hi\"\"\r\nthere\"\n" +
		"100005,\"g\r\n\"\n"
	const wantJSONL = `{"id":1,"note":"a\r\nb"}` + "\n" +
		`{"id":2,"note":"c\nd"}` + "\n" +
		`{"id":3,"note":"e\r\r\nf"}` + "\n" +
		`{"id":50000,"note":"mid\r\ndle"}` + "\n" +
		`{"id":100004,"note":"say \"hi\"\r\nthere"}` + "\n" +
		`{"id":100005,"note":"g\r\n"}` + "\n"
	// run reads file in (written into a fresh directory) with the source
	// and stages given and returns what the sink wrote to out.
	run := func(t *testing.T, in, text, source, stages, sink, out string) string {
		t.Helper()
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, in), text)
		job := "source:\n" + source + stages + "sink:\n  " + sink + "\n"
		rep, err := runJobFile(t, dir, job)
		if err != nil {
			t.Fatalf("%s: %v", job, err)
		}
		if rep.Skipped != 0 || rep.DeadLetters != 0 {
			t.Fatalf("%s: %d skipped, %d dead letters", job, rep.Skipped, rep.DeadLetters)
		}
		return readFile(t, filepath.Join(dir, out))
	}
	const pipeline = "pipeline:\n  - filter: note != \"plain\"\n"
	for _, c := range []struct{ name, source, stages string }{
		{"sequential", "  csv: {path: in.csv, parallelism: 1, columns: {id: int64, note: string}}\n", pipeline},
		{"parallel parser", "  csv: {path: in.csv, parallelism: 3, columns: {id: int64, note: string}}\n", pipeline},
		{"source workers", "  parallelism: 3\n  csv: {path: in.csv, columns: {id: int64, note: string}}\n",
			"region:\n  key_by: [id]\n  ops:\n    - filter: note != \"plain\"\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := run(t, "in.csv", crlfCSV(), c.source, c.stages, "csv: {path: out.csv}", "out.csv"); got != wantCSV {
				t.Fatalf("csv sink wrote\n%q\nwant\n%q", got, wantCSV)
			}
			if got := run(t, "in.csv", crlfCSV(), c.source, c.stages, "jsonl: {path: out.jsonl}", "out.jsonl"); got != wantJSONL {
				t.Fatalf("jsonl sink wrote\n%q\nwant\n%q", got, wantJSONL)
			}
		})
	}
	// The CSV output read back: the same values.
	back := "  csv: {path: in.csv, columns: {id: int64, note: string}}\n"
	if got := run(t, "in.csv", wantCSV, back, "", "csv: {path: out.csv}", "out.csv"); got != wantCSV {
		t.Fatalf("csv output read back and written as csv\n%q\nwant\n%q", got, wantCSV)
	}
	if got := run(t, "in.csv", wantCSV, back, "", "jsonl: {path: out.jsonl}", "out.jsonl"); got != wantJSONL {
		t.Fatalf("csv output read back and written as jsonl\n%q\nwant\n%q", got, wantJSONL)
	}
}
