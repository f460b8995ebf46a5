package jobfile

import (
	"path/filepath"
	"strings"
	"testing"

	"streamd/core"
)

// A column's long form {type: …} reads like the short form; a long-form
// key the source does not take, an unknown key, a missing type and a
// value of the wrong type are refused at their line and column.
func TestColumnLongForm(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "in.csv"), "k,v\na,1\nb,2\n")
	head := "source:\n  csv:\n    path: in.csv\n    columns:\n      k: string\n"
	tail := "sink:\n  csv: {path: out.csv}\n"
	job := buildJobFile(t, dir, head+"      v: {type: int64}\n"+tail, Options{})
	if got := job.Source.Schema().Fields; len(got) != 2 || got[1] != (core.Field{Name: "v", Type: core.Int64}) {
		t.Fatalf("schema %v", got)
	}
	for _, c := range []struct{ entry, want string }{
		{"      v: {type: int64, colour: red}\n", `job.yaml:6:32: source.csv.columns.v.colour: unknown key "colour" (expected type, format, time_zone, unit, nullable, default)`},
		{"      v: {type: int64, path: a.b}\n", "job.yaml:6:30: source.csv.columns.v.path: path does not apply here"},
		{"      v: {format: x}\n", `job.yaml:6:7: source.csv.columns.v: column "v" has no type`},
		{"      v: {}\n", `job.yaml:6:7: source.csv.columns.v: column "v"`},
		{"      v: {type: [int64]}\n", "job.yaml:6:11: source.csv.columns.v.type: type must be a type name"},
		{"      v: {type: int65}\n", `job.yaml:6:7: source.csv.columns.v: unknown type "int65"`},
		{"      v: [int64]\n", `job.yaml:6:7: source.csv.columns.v: column "v": expected a type name or a mapping`},
	} {
		err := buildText(t, dir, head+c.entry+tail, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.entry, err, c.want)
		}
	}
}

// A timestamp column's default is written as the column's values are: in
// its format (and time zone), not only in the default forms.
func TestTimestampDefaultInColumnFormat(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "in.csv"), "k,d\na,Mar 5 2001\nb,\n")
	text := "source:\n  csv:\n    path: in.csv\n    columns:\n      k: string\n" +
		"      d: {type: timestamp, format: \"%b %d %Y\", time_zone: Europe/Paris, default: \"Jan 1 2000\"}\n" +
		"sink:\n  csv: {path: out.csv}\n"
	if _, err := runJobFile(t, dir, text); err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, filepath.Join(dir, "out.csv")), "k,d\na,2001-03-04T23:00:00Z\nb,1999-12-31T23:00:00Z\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	err := buildText(t, dir, strings.Replace(text, `default: "Jan 1 2000"`, `default: "2000-01-01"`, 1), Options{})
	if err == nil || !strings.Contains(err.Error(), "source.csv.columns.d.default: default: ") {
		t.Errorf("a default not in the column's format: %v", err)
	}
}
