package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
)

// quietJob writes a keyed generator job with a region of as many channels
// as the machine has CPUs, so that it has more stages than usable cores
// and runs unpinned on any machine, writing out/out.csv beside it.
func quietJob(t *testing.T) (job, out string) {
	t.Helper()
	dir := t.TempDir()
	job = filepath.Join(dir, "job.yaml")
	writeTestFile(t, job, fmt.Sprintf(`source: {generator: {count: 20000, keys: 100}}
region:
  channels: %d
  key_by: [key]
  ops: [{filter: value > 0}]
sink: {csv: {path: out/out.csv}}
`, min(goruntime.NumCPU(), 1024)))
	return job, filepath.Join(dir, "out", "out.csv")
}

// runChild runs `streamd args…` as a process of its own (the test binary
// standing in for streamd, see TestMain) and returns its exit code and
// standard error.
func runChild(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "STREAMD_TEST_CHILD=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), stderr.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, stderr.String()
}

// A normal run prints its report and nothing that looks like trouble:
// where its stages run (the CPU set and the cgroup quota; unpinned, on a
// machine with fewer usable cores than stages) are info log lines, which
// -v and --log-level info show.
func TestQuietByDefault(t *testing.T) {
	job, out := quietJob(t)
	code, stderr := runChild(t, "run", job, "--status-interval", "1h")
	if code != 0 || strings.Contains(stderr, "level=") || strings.Contains(stderr, "WARN") || strings.Contains(stderr, "cgroup") ||
		!strings.HasPrefix(stderr, "job job: done in ") || !strings.HasSuffix(stderr, "\noutput: "+out+"\n") {
		t.Errorf("exit %d, stderr:\n%s\nwant 0, the report alone, ending in the output line", code, stderr)
	}
}

func TestVerbose(t *testing.T) {
	job, _ := quietJob(t)
	for _, flags := range [][]string{{"-v"}, {"--verbose"}, {"--log-level", "info"}, {"--log-level=debug"}} {
		code, stderr := runChild(t, append([]string{"run", job, "--status-interval", "1h"}, flags...)...)
		if code != 0 || !strings.Contains(stderr, "level=INFO msg=cpus detail=\"cpus: affinity ") ||
			!strings.Contains(stderr, `level=INFO msg="fewer usable cores than stages: running unpinned"`) ||
			strings.Contains(stderr, "WARN") || !strings.Contains(stderr, "\njob job: done in ") {
			t.Errorf("streamd run %s: exit %d, stderr:\n%s\nwant 0, the placement's info lines, no warning, the report", strings.Join(flags, " "), code, stderr)
		}
	}
	// --quiet prints nothing, unless a level is asked for.
	if code, stderr := runChild(t, "run", job, "--quiet"); code != 0 || stderr != "" {
		t.Errorf("streamd run --quiet: exit %d, stderr %q; want 0, nothing", code, stderr)
	}
	if code, stderr := runChild(t, "run", job, "--quiet", "-v"); code != 0 || !strings.Contains(stderr, "level=INFO msg=cpus ") || strings.Contains(stderr, "job job: ") {
		t.Errorf("streamd run --quiet -v: exit %d, stderr %q; want 0, info lines, no report", code, stderr)
	}
	for _, c := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"run", job, "--log-level", "loud"}, "streamd: --log-level \"loud\": expected one of debug, info, warn, error\n"},
		{[]string{"run", job, "-v", "--log-level", "error"}, "streamd: -v (--log-level info) and --log-level error: give one of them\n"},
		// Commands that log nothing refuse a bad level too.
		{[]string{"--log-level", "loud", "version"}, "streamd: --log-level \"loud\": expected one of debug, info, warn, error\n"},
		{[]string{"validate", job, "--log-level=LOUD"}, "streamd: --log-level \"LOUD\": expected one of debug, info, warn, error\n"},
		{[]string{"bench", "--list", "--log-level", "loud"}, "streamd: --log-level \"loud\": expected one of debug, info, warn, error\n"},
		{[]string{"checkpoints", "list", t.TempDir(), "-v", "--log-level", "warn"}, "streamd: -v (--log-level info) and --log-level warn: give one of them\n"},
	} {
		if code, _, stderr := cli(t, c.args...); code != 2 || stderr != c.stderr {
			t.Errorf("streamd %s: exit %d, stderr %q; want 2, %q", strings.Join(c.args, " "), code, stderr, c.stderr)
		}
	}
}

// The report ends naming the files the run wrote: the sink's file or
// directory of parts once the run has succeeded, and the dead-letter file
// when records went to it; a failed run names no output.
func TestReportOutputs(t *testing.T) {
	dir, job := badJob(t, "dead_letter")
	writeTestFile(t, job, strings.Replace(readTestFile(t, job), "on_error: dead_letter\n", "on_error: dead_letter\ndead_letter_path: bad/dead.jsonl\n", 1))
	code, _, stderr := cli(t, "run", job, "--status-interval", "1h")
	want := "errors: skipped 0, dead letters 1, late 0\noutput: " + filepath.Join(dir, "out", "out.csv") +
		"\ndead letters: " + filepath.Join(dir, "bad", "dead.jsonl") + "\n"
	if code != 0 || !strings.HasSuffix(stderr, want) {
		t.Errorf("dead letters: exit %d, stderr:\n%s\nwant 0, ending in\n%s", code, stderr, want)
	}

	writeTestFile(t, job, strings.Replace(readTestFile(t, job), "path: out/out.csv", "path: parts\n    parts: 3", 1))
	code, _, stderr = cli(t, "run", job, "--status-interval", "1h")
	if want := "\noutput: " + filepath.Join(dir, "parts") + " (3 part files)\ndead letters: " + filepath.Join(dir, "bad", "dead.jsonl") + "\n"; code != 0 || !strings.HasSuffix(stderr, want) {
		t.Errorf("parts: exit %d, stderr:\n%s\nwant 0, ending in %q", code, stderr, want)
	}

	dir, job = badJob(t, "fail")
	code, _, stderr = cli(t, "run", job, "--status-interval", "1h")
	if code != 1 || strings.Contains(stderr, "\noutput: ") || !strings.Contains(stderr, "job job: failed in ") {
		t.Errorf("failed run: exit %d, stderr:\n%s\nwant 1, a report without an output line", code, stderr)
	}

	// A sink that writes no file names none.
	job = filepath.Join(dir, "discard.yaml")
	writeTestFile(t, job, "source: {generator: {count: 10}}\nsink: {discard: {}}\n")
	if code, _, stderr := cli(t, "run", job, "--status-interval", "1h"); code != 0 || strings.Contains(stderr, "output") {
		t.Errorf("discard: exit %d, stderr:\n%s\nwant 0, no output line", code, stderr)
	}
}
