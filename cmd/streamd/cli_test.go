package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cli runs the command line as main does and returns its exit code and
// what it wrote to stdout and stderr. It swaps os.Stdout and os.Stderr, so
// its callers must not run in parallel.

// strongPromise is the line streamd validate prints after "ok" for a job
// that keeps the strong determinism promise.
const strongPromise = "determinism: strong — output and dead letters are byte-identical for any source parallelism, channel count, output workers, live channel change and restore\n"

func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	outF, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	errF, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = outF, errF
	defer func() {
		os.Stdout, os.Stderr = oldOut, oldErr
		outF.Close()
		errF.Close()
	}()
	code = run(args)
	o, _ := os.ReadFile(outF.Name())
	e, _ := os.ReadFile(errF.Name())
	return code, string(o), string(e)
}

func writeTestFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// badJob is a job over in.csv whose third line has a delay that is not a
// number, with the given on_error policy, writing out/out.csv.
func badJob(t *testing.T, policy string) (dir, job string) {
	t.Helper()
	dir = t.TempDir()
	writeTestFile(t, filepath.Join(dir, "in.csv"), "origin,delay\nSFO,5\nLAX,abc\nJFK,7\n")
	job = filepath.Join(dir, "job.yaml")
	writeTestFile(t, job, "on_error: "+policy+`
source:
  csv:
    path: in.csv
    columns: {origin: string, delay: int64}
region:
  channels: 2
  ops:
    - filter: delay > 0
sink:
  csv:
    path: out/out.csv
`)
	return dir, job
}

func TestExitCodes(t *testing.T) {
	quickstart := filepath.Join(repoRoot(t), "examples", "quickstart", "job.yaml")
	dir := t.TempDir()
	badConfig := filepath.Join(dir, "bad.yaml")
	writeTestFile(t, badConfig, "source:\n  generator: {count: 10}\nregion:\n  chanels: 2\nsink:\n  stdout: {}\n")
	missing := filepath.Join(dir, "missing.yaml")

	for _, c := range []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string
	}{
		{"validate ok", []string{"validate", quickstart}, 0, quickstart + ": ok\n" + strongPromise, ""},
		{"validate bad key", []string{"validate", badConfig}, 2, "",
			"streamd: " + badConfig + `:4:3: unknown field "chanels" (expected one of channels, key_by, key_groups, ordered, ops, elastic, rebalance)` + "\n"},
		{"validate missing file", []string{"validate", missing}, 2, "",
			"streamd: read job file: open " + missing + ": no such file or directory\n"},
		{"run missing file", []string{"run", missing}, 2, "",
			"streamd: read job file: open " + missing + ": no such file or directory\n"},
		{"run bad key", []string{"run", badConfig, "--quiet"}, 2, "",
			"streamd: " + badConfig + `:4:3: unknown field "chanels" (expected one of channels, key_by, key_groups, ordered, ops, elastic, rebalance)` + "\n"},
		{"run without a job", []string{"run"}, 2, "", "streamd: run: expected a job file (streamd run JOB.yaml)\n"},
		{"validate two jobs", []string{"validate", quickstart, quickstart}, 2, "", "streamd: validate: expected a job file (streamd validate JOB.yaml), not 2 arguments\n"},
		{"negative channels", []string{"run", quickstart, "--channels", "-1"}, 2, "", "streamd: --channels must be between 1 and 1024, not -1\n"},
		{"unknown flag", []string{"run", quickstart, "--chanels", "2"}, 2, "", "streamd: unknown flag: --chanels\n"},
		{"unknown command", []string{"execute", quickstart}, 2, "", "streamd: unknown command \"execute\" for \"streamd\"\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := cli(t, c.args...)
			if code != c.code || stdout != c.stdout || stderr != c.stderr {
				t.Errorf("streamd %s: exit %d, stdout %q, stderr %q; want %d, %q, %q",
					strings.Join(c.args, " "), code, stdout, stderr, c.code, c.stdout, c.stderr)
			}
		})
	}
}

// TestRunBadInput: under on_error: fail a malformed record is a job
// failure (exit 1) naming file, line and field, and an earlier output file
// is left as it was, with no temporary file beside it; under skip the job
// succeeds and the report counts the record.
func TestRunBadInput(t *testing.T) {
	t.Run("fail", func(t *testing.T) {
		dir, job := badJob(t, "fail")
		out := filepath.Join(dir, "out", "out.csv")
		writeTestFile(t, out, "earlier output\n")
		code, stdout, stderr := cli(t, "run", job, "--quiet")
		// The error is the last line; log lines (warnings) may come before.
		want := "streamd: " + filepath.Join(dir, "in.csv") + `:3: field "delay": "abc" is not an int64`
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if code != 1 || stdout != "" || lines[len(lines)-1] != want {
			t.Errorf("exit %d, stdout %q, stderr %q; want 1, \"\", last line %q", code, stdout, stderr, want)
		}
		if b, err := os.ReadFile(out); err != nil || string(b) != "earlier output\n" {
			t.Errorf("output file after a failed run: %q, %v", b, err)
		}
		if es, _ := os.ReadDir(filepath.Dir(out)); len(es) != 1 {
			t.Errorf("%d files in the output directory, want 1 (out.csv)", len(es))
		}
	})
	t.Run("skip", func(t *testing.T) {
		dir, job := badJob(t, "skip")
		code, stdout, stderr := cli(t, "run", job)
		if code != 0 || stdout != "" {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
		if want := "errors: skipped 1, dead letters 0, late 0\noutput: " + filepath.Join(dir, "out", "out.csv") + "\n"; !strings.HasSuffix(stderr, want) {
			t.Errorf("report does not end with the error counts and the output file:\n%s", stderr)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "out", "out.csv")); err != nil || string(b) != "origin,delay\nSFO,5\nJFK,7\n" {
			t.Errorf("output %q, %v", b, err)
		}
	})
}

// A job file changed since its checkpoints were taken (here the window's
// size) is refused on --restore with exit 2, naming the operator (core's
// TestRestoreRefusesAnotherJob covers the cases and the restore of an
// unchanged job). The first run, a paced generator that would take 20 s,
// is killed once it has a checkpoint.
func TestRestoreChangedJob(t *testing.T) {
	dir := t.TempDir()
	job := func(size string) string {
		p := filepath.Join(dir, "job-"+size+".yaml")
		writeTestFile(t, p, `source:
  generator: {seed: 1, count: 2000000, keys: 7, step: 1ms, rate: 100000}
event_time: {field: ts}
region:
  key_by: [key]
  ops:
    - window: {size: `+size+`, aggregates: {n: count}}
sink:
  csv: {path: out.csv}
checkpoint: {dir: ck, interval: 10ms}
`)
		return p
	}
	first := child(t, "run", "--quiet", job("100ms"))
	done := make(chan error, 1)
	go func() { done <- first.Wait() }()
	for !hasCheckpoint(filepath.Join(dir, "ck")) {
		select {
		case err := <-done:
			t.Fatalf("first run ended before its first checkpoint: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	first.Process.Signal(syscall.SIGKILL)
	<-done
	code, _, stderr := cli(t, "run", "--quiet", "--restore", "latest", job("200ms"))
	if code != 2 || !strings.Contains(stderr, "does not fit this job") || !strings.Contains(stderr, "region.ops[0]") {
		t.Fatalf("restore into a changed window: exit %d, %s", code, stderr)
	}
}
