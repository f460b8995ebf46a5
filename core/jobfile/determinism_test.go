package jobfile

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"streamd/core/runtime"
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
		// A sink that writes again after a restore: weak only where a
		// restore can happen (the job checkpoints).
		{"source:\n  generator: {count: 10}\nsink:\n  kafka: {brokers: [\"127.0.0.1:1\"], topic: t, delivery: at_least_once}\ncheckpoint: {dir: ck, interval: 1s}\n", []string{"sink.kafka.delivery"}},
		{"source:\n  generator: {count: 10}\nsink:\n  kafka: {brokers: [\"127.0.0.1:1\"], topic: t, delivery: exactly_once}\ncheckpoint: {dir: ck, interval: 1s}\n", nil},
		{"source:\n  generator: {count: 10}\nsink:\n  kafka: {brokers: [\"127.0.0.1:1\"], topic: t, delivery: at_least_once}\n", nil},
		{"source:\n  stdin: {format: jsonl, fields: {k: string}}\nsink:\n  discard: {}\n", []string{"source.stdin"}},
		// Operators after a window in the region: the merger carries the
		// firing order (window end, then key) through those that keep the
		// fields; one that replaces the key breaks it.
		{strings.Replace(fileJob, "aggregates: {n: count}}\n", "aggregates: {n: count}}\n    - filter: n > 0\n    - map: {m: n * 2}\n    - project: [window_end as e, k as key, m]\n", 1), nil},
		{strings.Replace(fileJob, "aggregates: {n: count}}\n", "aggregates: {n: count}}\n    - map: {k: upper(k)}\n", 1), []string{"region.ops[1]"}},
		{strings.Replace(fileJob, "aggregates: {n: count}}\n", "aggregates: {n: count}}\n    - project: [k, n]\n", 1), []string{"region.ops[1]"}},
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
		// Exactly-once is promised unless the sink writes again after a
		// restore.
		sinkWeak := slices.ContainsFunc(c.weak, func(at string) bool { return strings.HasPrefix(at, "sink.") })
		if !p.Strong() && strings.Contains(p.String(), "exactly-once per checkpoint") == sinkWeak {
			t.Errorf("%q: promise text %q", c.text, p.String())
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

// Operators after a window in the region (a filter, a map adding a field,
// a project renaming, a lookup): the output is the same bytes at 1, 2 and
// 3 channels and with 2 source workers. Before, the merger ordered a
// firing's rows by the region's last operator's order only, and rows
// after a filter came out channel by channel.
func TestWindowThenOpsSameOutput(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "names.csv"), "key,name\nk000001,one\nk000002,two\n")
	job := `determinism: strong
source:
  generator: {seed: 5, count: 16000, keys: 3000, distribution: zipf, step: 1ms}
event_time: {field: ts}
region:
  channels: 2
  key_by: [key]
  ops:
    - window:
        size: 2s
        aggregates: {n: count}
    - filter: n > 0
    - lookup_csv: {path: names.csv, key: key, fields: [name]}
    - map: {twice: n * 2}
    - project: [window_end as end, key as k, twice, name]
sink:
  csv: {path: out.csv}
`
	var want string
	for _, o := range []Options{{Channels: 1, SourceParallelism: 1}, {Channels: 2}, {Channels: 3, SourceParallelism: 2}} {
		if _, err := runtime.Run(context.Background(), buildJobFile(t, dir, job, o)); err != nil {
			t.Fatal(err)
		}
		got := readFile(t, filepath.Join(dir, "out.csv"))
		if want == "" {
			want = got
			if n := strings.Count(got, "\n"); n < 1000 {
				t.Fatalf("%d lines: not the case this test is for", n)
			}
			continue
		}
		if got != want {
			t.Fatalf("%+v: output differs from one channel's:%s", o, excerpt(got, want))
		}
	}
}
