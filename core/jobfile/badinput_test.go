package jobfile

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"streamd/core"
	"streamd/core/plan"
	"streamd/core/runtime"
)

// deadLetter is a line of the dead-letter file.
type deadLetter struct {
	Input  string `json:"input"`
	Pos    int64  `json:"pos"`
	Reason string `json:"reason"`
	Record string `json:"record"`
}

// badInput is an input with malformed records, run under each on_error
// policy. "$DIR/" in the expectations stands for the job's directory.
type badInput struct {
	name   string
	source string // the source: block's body, reading "in"
	input  string
	pre    string // optional pipeline: block
	// fail is the error under on_error: fail.
	fail string
	// out is the sink's CSV under skip and dead_letter.
	out string
	// dead are the dead letters under dead_letter.
	dead []deadLetter
}

const csvSource = `  csv:
    path: in
    columns:
      ts: timestamp
      origin: string
      delay: int64
`

const jsonlSource = `  jsonl:
    path: in
    fields:
      ts: timestamp
      origin: string
      delay: int64
`

var badInputs = []badInput{{
	name:   "csv_field_count",
	source: csvSource,
	input: "ts,origin,delay\n" +
		"2024-01-01T00:00:00Z,SFO,5\n" +
		"2024-01-01T00:10:00Z,LAX,20,9\n" +
		"2024-01-01T00:20:00Z,SFO,7\n" +
		"2024-01-01T00:30:00Z,JFK\n",
	fail: "$DIR/in:3: 4 fields, expected 3",
	out:  "ts,origin,delay\n2024-01-01T00:00:00Z,SFO,5\n2024-01-01T00:20:00Z,SFO,7\n",
	dead: []deadLetter{
		{"$DIR/in", 3, "4 fields, expected 3", "2024-01-01T00:10:00Z,LAX,20,9"},
		{"$DIR/in", 5, "2 fields, expected 3", "2024-01-01T00:30:00Z,JFK"},
	},
}, {
	name:   "csv_wrong_type",
	source: csvSource,
	input: "ts,origin,delay\n" +
		"2024-01-01T00:00:00Z,SFO,5\n" +
		"\n" + // blank lines are skipped but counted
		"2024-01-01T00:10:00Z,LAX,abc\n" +
		"yesterday,SFO,7\n" +
		"2024-01-01T00:30:00Z,JFK,8\n",
	fail: `$DIR/in:4: field "delay": "abc" is not an int64`,
	out:  "ts,origin,delay\n2024-01-01T00:00:00Z,SFO,5\n2024-01-01T00:30:00Z,JFK,8\n",
	dead: []deadLetter{
		{"$DIR/in", 4, `field "delay": "abc" is not an int64`, "2024-01-01T00:10:00Z,LAX,abc"},
		{"$DIR/in", 5, `field "ts": "yesterday" is not a timestamp (expected RFC 3339, "2006-01-02 15:04:05", a date, or ns since the epoch; give format: for other forms)`, "yesterday,SFO,7"},
	},
}, {
	name:   "csv_bad_quote",
	source: csvSource,
	input: "ts,origin,delay\n" +
		"2024-01-01T00:00:00Z,\"SF\"O,5\n" +
		"2024-01-01T00:10:00Z,LAX,6\n",
	fail: `$DIR/in:2: extraneous or missing " in quoted-field`,
	out:  "ts,origin,delay\n2024-01-01T00:10:00Z,LAX,6\n",
	dead: []deadLetter{
		// TODO(core/source): the record should be the line as read,
		// 2024-01-01T00:00:00Z,"SF"O,5; encoding/csv gives back only the
		// fields before the bad quote.
		{"$DIR/in", 2, `extraneous or missing " in quoted-field`, "2024-01-01T00:00:00Z"},
	},
}, {
	name:   "jsonl_not_json",
	source: jsonlSource,
	input: `{"ts":"2024-01-01T00:00:00Z","origin":"SFO","delay":5}` + "\n" +
		"not json\n" +
		`{"ts":"2024-01-01T00:10:00Z","origin":"LAX","delay":6,}` + "\n" +
		`{"ts":"2024-01-01T00:20:00Z","origin":"JFK","delay":7}` + "\n",
	fail: `$DIR/in:2: invalid JSON at column 1: expected an object ('{'), found 'n'`,
	out:  "ts,origin,delay\n2024-01-01T00:00:00Z,SFO,5\n2024-01-01T00:20:00Z,JFK,7\n",
	dead: []deadLetter{
		{"$DIR/in", 2, `invalid JSON at column 1: expected an object ('{'), found 'n'`, "not json"},
		{"$DIR/in", 3, `invalid JSON at column 55: expected a member name`, `{"ts":"2024-01-01T00:10:00Z","origin":"LAX","delay":6,}`},
	},
}, {
	name:   "jsonl_wrong_type",
	source: jsonlSource,
	input: `{"ts":"2024-01-01T00:00:00Z","origin":"SFO","delay":"abc"}` + "\n" +
		`{"ts":"2024-01-01T00:10:00Z","origin":"LAX"}` + "\n" +
		`{"ts":"2024-01-01T00:20:00Z","origin":"JFK","delay":7.5}` + "\n" +
		`{"ts":"2024-01-01T00:30:00Z","origin":"SFO","delay":8,"extra":[1,2]}` + "\n",
	fail: `$DIR/in:1: field "delay": "abc" is not an int64`,
	out:  "ts,origin,delay\n2024-01-01T00:30:00Z,SFO,8\n",
	dead: []deadLetter{
		{"$DIR/in", 1, `field "delay": "abc" is not an int64`, `{"ts":"2024-01-01T00:00:00Z","origin":"SFO","delay":"abc"}`},
		{"$DIR/in", 2, `field "delay" is missing`, `{"ts":"2024-01-01T00:10:00Z","origin":"LAX"}`},
		{"$DIR/in", 3, `field "delay": 7.5 is not an int64: not integral`, `{"ts":"2024-01-01T00:20:00Z","origin":"JFK","delay":7.5}`},
	},
}, {
	// A record that only an operator finds bad: integer % by zero.
	name:   "operator_error",
	source: csvSource,
	pre:    "pipeline:\n  - map:\n      r: 100 % delay\n  - project: [origin, r]\n",
	input: "ts,origin,delay\n" +
		"2024-01-01T00:00:00Z,SFO,5\n" +
		"2024-01-01T00:10:00Z,LAX,0\n" +
		"2024-01-01T00:20:00Z,JFK,7\n",
	fail: `pipeline[0].map:3: field "r": 1:5: integer divide by zero`, // 3 is the input line, 1:5 the place in the expression
	out:  "origin,r\nSFO,0\nJFK,2\n",
	dead: []deadLetter{
		{"pipeline[0].map", 3, `field "r": 1:5: integer divide by zero`, "ts=2024-01-01T00:10:00Z origin=LAX delay=0"},
	},
}, {
	name:   "jsonl_empty",
	source: jsonlSource,
	input:  "",
	out:    "ts,origin,delay\n",
}, {
	name:   "csv_empty_without_header",
	source: "  csv:\n    path: in\n    header: false\n    columns: {ts: timestamp, origin: string, delay: int64}\n",
	input:  "",
	out:    "ts,origin,delay\n",
}}

// TestBadInput runs each bad input under on_error: fail, skip and
// dead_letter, through Build and runtime.Run.
func TestBadInput(t *testing.T) {
	for _, c := range badInputs {
		for _, policy := range []string{"fail", "skip", "dead_letter"} {
			t.Run(c.name+"/"+policy, func(t *testing.T) {
				dir := t.TempDir()
				sub := func(s string) string { return strings.ReplaceAll(s, "$DIR/", dir+"/") }
				writeFile(t, filepath.Join(dir, "in"), c.input)
				job := fmt.Sprintf("on_error: %s\ndead_letter_path: dead.jsonl\nsource:\n%s%ssink:\n  csv:\n    path: out/out.csv\n", policy, c.source, c.pre)
				rep, err := runJobFile(t, dir, job)
				out := filepath.Join(dir, "out", "out.csv")
				dead := filepath.Join(dir, "dead.jsonl")
				bad := int64(len(c.dead))

				if policy == "fail" && c.fail != "" {
					if err == nil || err.Error() != sub(c.fail) {
						t.Fatalf("error %v, want %s", err, sub(c.fail))
					}
					var re *core.RecordError
					if !errors.As(err, &re) || re.Pos != c.dead[0].Pos {
						t.Errorf("error %#v is not a *core.RecordError at %d", err, c.dead[0].Pos)
					}
					assertNoFiles(t, filepath.Join(dir, "out")) // not even a temporary file
					assertMissing(t, dead)
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if got := readFile(t, out); got != c.out {
					t.Errorf("output\n%s\nwant\n%s", got, c.out)
				}
				if want := strings.Count(c.out, "\n") - 1; rep.RecordsOut != int64(want) {
					t.Errorf("RecordsOut %d, want %d", rep.RecordsOut, want)
				}
				switch policy {
				case "fail":
					assertMissing(t, dead)
				case "skip":
					if rep.Skipped != bad || rep.DeadLetters != 0 {
						t.Errorf("skipped %d, dead letters %d; want %d, 0", rep.Skipped, rep.DeadLetters, bad)
					}
					assertMissing(t, dead)
				case "dead_letter":
					if rep.Skipped != 0 || rep.DeadLetters != bad {
						t.Errorf("skipped %d, dead letters %d; want 0, %d", rep.Skipped, rep.DeadLetters, bad)
					}
					if bad == 0 {
						assertMissing(t, dead)
						return
					}
					want := make([]deadLetter, len(c.dead))
					for i, d := range c.dead {
						d.Input = sub(d.Input)
						want[i] = d
					}
					if got := readDeadLetters(t, dead); !reflect.DeepEqual(got, want) {
						t.Errorf("dead letters\n%+v\nwant\n%+v", got, want)
					}
				}
			})
		}
	}
}

// TestDeadLetterFile: the dead-letter file's directory is created when the
// job starts, and the file is appended to, run after run: it is not an
// output that a run replaces.
func TestDeadLetterFile(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "in"), "ts,origin,delay\n2024-01-01T00:00:00Z,SFO,x\n")
	job := "on_error: dead_letter\ndead_letter_path: dead/letters.jsonl\nsource:\n" + csvSource + "sink:\n  csv:\n    path: out.csv\n"
	for range 2 {
		if _, err := runJobFile(t, dir, job); err != nil {
			t.Fatal(err)
		}
	}
	if got := readDeadLetters(t, filepath.Join(dir, "dead", "letters.jsonl")); len(got) != 2 || got[0] != got[1] || got[0].Pos != 2 {
		t.Errorf("dead letters after two runs: %+v", got)
	}
}

// buildJobFile writes job.yaml into dir, loads it and builds it with opt
// (a failure fails the test).
func buildJobFile(t *testing.T, dir, text string, opt Options) *plan.Job {
	t.Helper()
	path := filepath.Join(dir, "job.yaml")
	writeFile(t, path, text)
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	job, err := f.Build(opt)
	if err != nil {
		t.Fatal(err)
	}
	return job
}

// runJobFile writes job.yaml into dir, builds it and runs it.
func runJobFile(t *testing.T, dir, text string) (*runtime.Report, error) {
	t.Helper()
	job := buildJobFile(t, dir, text, Options{})
	rep, err := runtime.Run(context.Background(), job)
	if rep == nil {
		t.Fatalf("no report (error %v)", err)
	}
	return rep, err
}

func readDeadLetters(t *testing.T, path string) []deadLetter {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ds []deadLetter
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var d deadLetter
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d); err != nil {
			t.Fatalf("dead letter %q: %v", sc.Text(), err)
		}
		ds = append(ds, d)
	}
	return ds
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func assertMissing(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists (stat: %v)", path, err)
	}
}

// assertNoFiles checks that dir, if it exists, is empty.
func assertNoFiles(t *testing.T, dir string) {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range es {
		t.Errorf("%s left in %s", e.Name(), dir)
	}
}

// TestUnreadableInput: a missing input file, or an empty CSV file where a
// header is expected, is a configuration error under every policy: Build
// fails at the source's path.
func TestUnreadableInput(t *testing.T) {
	for _, c := range []struct{ name, create, want string }{
		{"missing", "", `job.yaml:6:11: source.csv.path: csv source: open $DIR/in.csv: no such file or directory`},
		{"empty", "in.csv", `job.yaml:6:11: source.csv.path: csv source $DIR/in.csv: empty input: no header`},
	} {
		for _, policy := range []string{"fail", "skip", "dead_letter"} {
			t.Run(c.name+"/"+policy, func(t *testing.T) {
				dir := t.TempDir()
				if c.create != "" {
					writeFile(t, filepath.Join(dir, c.create), "")
				}
				path := filepath.Join(dir, "job.yaml")
				writeFile(t, path, "on_error: "+policy+"\ndead_letter_path: dead.jsonl\nsource:\n  csv:\n    header: true\n    path: in.csv\nsink:\n  csv:\n    path: out.csv\n")
				err := loadAndBuild(path)
				want := strings.ReplaceAll(c.want, "$DIR/", dir+"/")
				if err == nil || strings.TrimPrefix(err.Error(), dir+"/") != want {
					t.Fatalf("error %v, want %s", err, want)
				}
				assertMissing(t, filepath.Join(dir, "dead.jsonl"))
				assertMissing(t, filepath.Join(dir, "out.csv"))
			})
		}
	}
}
