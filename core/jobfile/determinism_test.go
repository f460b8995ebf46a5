package jobfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A job's promise names each feature outside the strong contract at its
// path; determinism: strong refuses the first at its line and column, and
// builds a job whose features all keep the promise.
func TestDeterminismPromise(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "in.csv"), "k,v\na,1\n")
	fileJob := "source:\n  csv: {path: in.csv, columns: {k: string, v: int64}}\nevent_time: {field: v}\nregion:\n  key_by: [k]\n  ops:\n    - window: {size: 1s, aggregates: {n: count}}\nsink:\n  csv: {path: out.csv}\n"
	stdinJob := "source:\n  stdin: {format: csv, fields: {k: string, v: int64}}\npipeline:\n  - filter: v > 0\n  - lookup_http: {url: \"http://127.0.0.1:1/{key}\", key: k, fields: {x: string}}\nsink:\n  csv: {path: out.csv}\n"
	for _, c := range []struct {
		text string
		weak []string // the paths of the weak uses
	}{
		{fileJob, nil},
		{"source:\n  generator: {count: 10, rate: 1000}\nsink:\n  discard: {}\n", nil},
		{"source:\n  generator: {count: 10, rate: 1000}\nevent_time: {field: ts}\nsink:\n  discard: {}\n", nil},
		// A rate moves batch boundaries, and so the watermarks: an event
		// time that can decrease makes which records are late depend on it.
		{"source:\n  generator: {count: 10, rate: 1000}\nevent_time: {expr: 'ts - duration(\"1ms\") * (seq % 7)'}\nsink:\n  discard: {}\n", []string{"event_time"}},
		{"source:\n  generator: {count: 10, rate_steps: [{at: 0s, rate: 10}]}\nevent_time: {field: value}\nsink:\n  discard: {}\n", []string{"event_time"}},
		{"source:\n  generator: {count: 10}\nevent_time: {field: value}\nsink:\n  discard: {}\n", nil},
		{stdinJob, []string{"source.stdin", "pipeline[1].lookup_http"}},
		{"source:\n  stdin: {format: jsonl, fields: {k: string}}\nsink:\n  discard: {}\n", []string{"source.stdin"}},
	} {
		buildJobFile(t, dir, c.text, Options{Validate: true})
		f, err := Load(filepath.Join(dir, "job.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Build(Options{Validate: true}); err != nil {
			t.Fatal(err)
		}
		p := f.Promise()
		var got []string
		for _, w := range p.Weak {
			got = append(got, w.At)
		}
		if strings.Join(got, ",") != strings.Join(c.weak, ",") || p.Strong() != (len(c.weak) == 0) {
			t.Errorf("%q: weak uses %v, want %v", c.text, got, c.weak)
		}
		if p.Strong() != strings.HasPrefix(p.String(), "determinism: strong") {
			t.Errorf("promise text %q", p.String())
		}
		err = buildText(t, dir, "determinism: strong\n"+c.text, Options{Validate: true})
		if (err == nil) != p.Strong() {
			t.Errorf("determinism: strong with %v: build error %v", c.weak, err)
		}
		if err != nil && !strings.Contains(err.Error(), c.weak[0]+": determinism: strong (line 1) promises byte-identical output, but ") {
			t.Errorf("determinism: strong: %v", err)
		}
	}
	err := buildText(t, dir, "determinism: exact\n"+fileJob, Options{})
	if err == nil || !strings.Contains(err.Error(), `job.yaml:1:14: determinism: determinism must be strong or any, not "exact"`) {
		t.Errorf("bad value: %v", err)
	}
	if err := buildText(t, dir, "determinism: any\n"+stdinJob, Options{Validate: true}); err != nil {
		t.Errorf("determinism: any: %v", err)
	}
}

// Every example job says which promise it gets, and the ones that promise
// byte-identical output (determinism: strong) build.
func TestExamplesPromise(t *testing.T) {
	jobs, _ := filepath.Glob(filepath.Join("..", "..", "examples", "*", "*.yaml"))
	if len(jobs) < 4 {
		t.Fatalf("examples: %v", jobs)
	}
	t.Setenv("STREAMD_DATA", filepath.Join("..", "..", "..", "shared", "data"))
	for _, path := range jobs {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(text), "\ndeterminism: ") {
			t.Errorf("%s does not state its determinism", path)
		}
		f, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if f.Spec.Determinism == DeterminismStrong && !f.Promise().Strong() {
			t.Errorf("%s: determinism: strong but %v", path, f.Promise().Weak)
		}
	}
}
