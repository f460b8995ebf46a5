package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"streamd/snapshot"
)

// checkpointJob writes a job with a checkpoint: section and, if ids are
// given, complete checkpoints with those ids in its checkpoint directory,
// as an unfinished run leaves them. It returns the job file and the
// checkpoint directory.
func checkpointJob(t *testing.T, ids ...uint64) (job, ck string) {
	t.Helper()
	dir := t.TempDir()
	job = filepath.Join(dir, "job.yaml")
	writeTestFile(t, job, "source: {generator: {count: 100}}\nsink: {csv: {path: out/out.csv}}\ncheckpoint: {dir: ck}\n")
	ck = filepath.Join(dir, "ck")
	if len(ids) == 0 {
		return job, ck
	}
	store, err := snapshot.Open(ck, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		w, err := store.Begin(id)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Commit(snapshot.Metadata{Sources: map[string]int64{"source": int64(id)}}); err != nil {
			t.Fatal(err)
		}
	}
	return job, ck
}

// Usage and configuration errors of the command line exit 2 with a message
// that says what is wrong and, where there is one, what to do instead.
func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	noRegion := filepath.Join(dir, "noregion.yaml")
	writeTestFile(t, noRegion, "source: {generator: {count: 10}}\nsink: {discard: {}}\n")
	keyed := filepath.Join(dir, "keyed.yaml")
	writeTestFile(t, keyed, "source: {generator: {count: 10}}\nregion:\n  channels: 2\n  key_by: [key]\n  ops: [{filter: value > 0}]\nsink: {discard: {}}\n")
	// An elastic region: the job file's min_channels is at 6:19, its
	// max_channels at 7:19.
	elasticJob := filepath.Join(dir, "elastic.yaml")
	writeTestFile(t, elasticJob, "source: {generator: {count: 10}}\nregion:\n  channels: 2\n  key_by: [key]\n  elastic:\n"+
		"    min_channels: 2\n    max_channels: 4\n  ops: [{filter: value > 0}]\nsink: {discard: {}}\n")
	fresh, freshCk := checkpointJob(t)
	_, ck := checkpointJob(t, 1, 2)
	notCk := t.TempDir()
	sinkDir := filepath.Join(dir, "sinkdir.yaml")
	writeTestFile(t, sinkDir, "source: {generator: {count: 10}}\nsink:\n  csv: {path: out}\n")
	os.Mkdir(filepath.Join(dir, "out"), 0o755)
	chk := filepath.Join(ck, snapshot.Name(2))

	for _, c := range []struct {
		name   string
		args   []string
		code   int
		stderr string // the whole of standard error, or its start when it ends in "…"
	}{
		{"no command", nil, 2, "streamd: no command given (expected run, validate, bench, checkpoints, ctl or version)\n"},
		{"empty restore", []string{"run", fresh, "--restore="}, 2, "streamd: --restore needs latest or a checkpoint directory, not an empty value\n"},
		{"checkpoints without a command", []string{"checkpoints"}, 2, "streamd: checkpoints: no command given (expected list or inspect)\n"},
		{"checkpoints with an unknown command", []string{"checkpoints", "foo"}, 2, "streamd: checkpoints: unknown command \"foo\" (expected list or inspect)\n"},
		{"zero channels", []string{"run", keyed, "--channels", "0"}, 2, "streamd: --channels must be between 1 and 1024, not 0\n"},
		{"zero source workers", []string{"run", keyed, "--source-parallelism", "0"}, 2,
			"streamd: --source-parallelism must be between 1 and 256, not 0 (leave it out for auto)\n"},
		{"too many source workers", []string{"run", keyed, "--source-parallelism", "257"}, 2,
			"streamd: --source-parallelism must be between 1 and 256, not 257 (leave it out for auto)\n"},
		{"zero output workers", []string{"run", keyed, "--output-workers", "0"}, 2,
			"streamd: --output-workers must be between 1 and 256, not 0 (leave it out for auto)\n"},
		{"channels without a region", []string{"run", noRegion, "--channels", "4"}, 2,
			"streamd: --channels 4: " + noRegion + " has no parallel region (region:) whose channels it could set\n"},
		{"too many channels", []string{"run", keyed, "--channels", "5000"}, 2,
			"streamd: --channels must be between 1 and 1024, not 5000\n"},
		{"channels above the elastic max_channels", []string{"run", elasticJob, "--channels", "8"}, 2,
			"streamd: --channels 8: more than the elastic controller's max_channels 4 (" + elasticJob + ":7:19: region.elastic.max_channels)\n"},
		{"channels below the elastic min_channels", []string{"run", elasticJob, "--channels", "1"}, 2,
			"streamd: --channels 1: fewer than the elastic controller's min_channels 2 (" + elasticJob + ":6:19: region.elastic.min_channels)\n"},
		{"validate a sink path that is a directory", []string{"validate", sinkDir}, 2,
			"streamd: " + sinkDir + ":3:15: sink.csv.path: " + filepath.Join(dir, "out") + " is a directory (expected the path of a regular file, or of one to create)\n"},
		{"run a sink path that is a directory", []string{"run", sinkDir}, 2,
			"streamd: " + sinkDir + ":3:15: sink.csv.path: " + filepath.Join(dir, "out") + " is a directory (expected the path of a regular file, or of one to create)\n"},
		{"list a missing directory", []string{"checkpoints", "list", filepath.Join(dir, "nope")}, 2,
			"streamd: checkpoints list: " + filepath.Join(dir, "nope") + " does not exist\n"},
		{"list a checkpoint", []string{"checkpoints", "list", chk}, 2,
			"streamd: checkpoints list: " + chk + " is a checkpoint, not a checkpoint directory: use streamd checkpoints inspect " + chk + ", or list its parent\n"},
		{"inspect a missing directory", []string{"checkpoints", "inspect", filepath.Join(dir, "nope")}, 2,
			"streamd: checkpoints inspect: " + filepath.Join(dir, "nope") + " does not exist\n"},
		{"inspect a directory without metadata", []string{"checkpoints", "inspect", notCk}, 2,
			"streamd: checkpoints inspect: " + notCk + " is not a checkpoint (it has no _metadata file)\n"},
		{"inspect the checkpoint directory", []string{"checkpoints", "inspect", ck}, 2,
			"streamd: checkpoints inspect: " + ck + " is a checkpoint directory holding 2 checkpoint(s), not one checkpoint: pass one of its chk-… entries (the newest is " + chk + "), or see streamd checkpoints list " + ck + "\n"},
		{"restore the checkpoint directory", []string{"run", fresh, "--restore", ck}, 2,
			"streamd: --restore: " + ck + " is a checkpoint directory holding 2 checkpoint(s)…"},
		{"run without a job file", []string{"run"}, 2, "streamd: run: expected a job file (streamd run JOB.yaml)\n"},
		{"run with two job files", []string{"run", keyed, keyed}, 2, "streamd: run: expected a job file (streamd run JOB.yaml), not 2 arguments\n"},
		{"validate without a job file", []string{"validate"}, 2, "streamd: validate: expected a job file (streamd validate JOB.yaml)\n"},
		{"ctl with a command where ADDR belongs", []string{"ctl", "scale", "3"}, 2,
			"streamd: ctl: expected ADDR before scale (the job's --control-addr: streamd ctl ADDR scale …)\n"},
		{"ctl with an address and no command", []string{"ctl", "127.0.0.1:1"}, 2,
			"streamd: ctl: expected a command after ADDR (one of status, scale, rebalance, pause-controller, resume-controller, checkpoint, stop, update)\n"},
		{"ctl with an unknown command", []string{"ctl", "127.0.0.1:1", "bogus"}, 2,
			"streamd: ctl: unknown command \"bogus\" (expected one of status, scale, rebalance, pause-controller, resume-controller, checkpoint, stop, update)\n"},
		{"ctl scale without N", []string{"ctl", "127.0.0.1:1", "scale"}, 2,
			"streamd: scale: expected the channel count N (streamd ctl ADDR scale N)\n"},
		{"ctl scale with two arguments", []string{"ctl", "127.0.0.1:1", "scale", "1", "2"}, 2,
			"streamd: scale: expected the channel count N (streamd ctl ADDR scale N), not 2 arguments\n"},
		{"ctl scale to 0 channels", []string{"ctl", "127.0.0.1:1", "scale", "0"}, 2,
			"streamd: scale: \"0\" is not a channel count (a whole number, 1 or more)\n"},
		{"ctl scale to a word", []string{"ctl", "127.0.0.1:1", "scale", "two"}, 2,
			"streamd: scale: \"two\" is not a channel count (a whole number, 1 or more)\n"},
		{"ctl update without an operator", []string{"ctl", "127.0.0.1:1", "update"}, 2,
			"streamd: update: expected OPERATOR and its new entry SPEC, or OPERATOR -f FILE (streamd ctl ADDR update OPERATOR [SPEC])\n"},
		{"ctl status with an argument", []string{"ctl", "127.0.0.1:1", "status", "x"}, 2,
			"streamd: status: takes no arguments, not \"x\" (streamd ctl ADDR status --help)\n"},
		{"restore latest without a checkpoint", []string{"run", fresh, "--restore", "latest"}, 2,
			"streamd: --restore latest: no checkpoint in " + freshCk + " to resume from; run without --restore to start afresh\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := cli(t, c.args...)
			want, prefix := strings.CutSuffix(c.stderr, "…")
			if code != c.code || (!prefix && stderr != want) || (prefix && !strings.HasPrefix(stderr, want)) {
				t.Errorf("streamd %s: exit %d, stderr %q; want %d, %q", strings.Join(c.args, " "), code, stderr, c.code, c.stderr)
			}
		})
	}
	// A command's help names the whole command line, with or without ADDR.
	for _, args := range [][]string{{"ctl", "scale", "--help"}, {"ctl", "ADDR", "scale", "-h"}} {
		if code, out, _ := cli(t, args...); code != 0 || !strings.Contains(out, "\n  streamd ctl ADDR scale N [flags]\n") {
			t.Errorf("streamd %s: exit %d, %q", strings.Join(args, " "), code, out)
		}
	}
	// The help of ctl ADDR names its -h as ctl's, not the address's.
	if code, out, _ := cli(t, "ctl", "127.0.0.1:7450", "--help"); code != 0 || !strings.Contains(out, "help for ctl ADDR\n") || strings.Contains(out, "help for 127") {
		t.Errorf("streamd ctl 127.0.0.1:7450 --help: exit %d, %q", code, out)
	}
	if code, out, _ := cli(t, "checkpoints", "inspect", chk); code != 0 || !strings.HasPrefix(out, "checkpoint 2 ") {
		t.Errorf("inspect %s: exit %d, %q", chk, code, out)
	}
}

// validate creates and changes nothing: it does not create checkpoint.dir,
// and a directory holding an unfinished run's checkpoints is mentioned,
// not refused (the job may be about to be resumed).
func TestValidateLeavesCheckpointsAlone(t *testing.T) {
	job, ck := checkpointJob(t)
	if code, out, stderr := cli(t, "validate", job); code != 0 || out != job+": ok\n"+strongPromise || stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if _, err := os.Stat(ck); err == nil {
		t.Fatal("validate created checkpoint.dir")
	}
	job, ck = checkpointJob(t, 3)
	code, out, stderr := cli(t, "validate", job)
	if code != 0 || out != job+": ok\n"+strongPromise || !strings.Contains(stderr, "note: "+ck+" holds 1 checkpoint(s) of an unfinished run") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if n, _ := snapshot.View(ck, nil).Count(); n != 1 {
		t.Fatalf("%d checkpoints after validate, want 1", n)
	}
}

// --elastic-log creates its file's directory, as the sinks do.
func TestElasticLogDirectory(t *testing.T) {
	dir := t.TempDir()
	job := filepath.Join(dir, "job.yaml")
	writeTestFile(t, job, `source: {generator: {count: 20000}}
region:
  channels: 1
  key_by: [key]
  elastic: {policy: off, period: 10ms, max_channels: 2}
  ops: [{filter: value > 0}]
sink: {discard: {}}
runtime: {pin: false}
`)
	log := filepath.Join(dir, "logs", "deeper", "timeline.csv")
	if code, _, stderr := cli(t, "run", job, "--quiet", "--elastic-log", log); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(log); err != nil {
		t.Fatal(err)
	}
	// policy: off has no controller: the timeline stays empty, and run
	// says so; with a policy it gets a header at least, and no warning.
	_, _, stderr := cli(t, "run", job, "--quiet", "--elastic-log", log)
	if !strings.Contains(stderr, "--elastic-log: the job has no elastic controller") {
		t.Errorf("policy off: stderr %q", stderr)
	}
	writeTestFile(t, job, strings.Replace(readTestFile(t, job), "policy: off", "policy: levels", 1))
	_, _, stderr = cli(t, "run", job, "--quiet", "--elastic-log", log)
	if data, _ := os.ReadFile(log); stderr != "" || !strings.HasPrefix(string(data), "t_s,channels,") {
		t.Errorf("policy levels: stderr %q, timeline %q", stderr, data)
	}
}

// bench --help says what --duration 0 means.
func TestBenchDurationZeroHelp(t *testing.T) {
	code, out, _ := cli(t, "bench", "--help")
	if code != 0 || !strings.Contains(out, "--duration 0 sets no time limit") {
		t.Errorf("exit %d, help:\n%s", code, out)
	}
}

func readTestFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// validate reads nothing from standard input: a stdin source with fields
// is checked without it (the input is still there afterwards), and one
// whose columns would come from the header is refused with a hint.
func TestValidateLeavesStdinAlone(t *testing.T) {
	dir := t.TempDir()
	withFields := filepath.Join(dir, "fields.yaml")
	writeTestFile(t, withFields, "source:\n  stdin: {format: csv, fields: {k: string, v: int64}}\nsink: {csv: {path: out.csv}}\n")
	fromHeader := filepath.Join(dir, "header.yaml")
	writeTestFile(t, fromHeader, "source:\n  stdin: {format: csv}\nsink: {csv: {path: out.csv}}\n")
	in := filepath.Join(dir, "in.csv")
	writeTestFile(t, in, "k,v\na,1\n")
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	old := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = old }()
	if code, stdout, stderr := cli(t, "validate", withFields); code != 0 || !strings.Contains(stdout, "ok") {
		t.Fatalf("validate with fields: exit %d, %s %s", code, stdout, stderr)
	}
	if code, _, stderr := cli(t, "validate", fromHeader); code != 2 || !strings.Contains(stderr, "header.yaml:2:3") || !strings.Contains(stderr, "give fields") {
		t.Fatalf("validate without fields: exit %d, %s", code, stderr)
	}
	// header: false without fields is refused as run refuses it (columns
	// must be named), not with the hint about learning them from a header.
	noHeader := filepath.Join(dir, "noheader.yaml")
	writeTestFile(t, noHeader, "source:\n  stdin: {format: csv, header: false}\nsink: {csv: {path: out.csv}}\n")
	if code, _, stderr := cli(t, "validate", noHeader); code != 2 || !strings.Contains(stderr, "noheader.yaml:2:3") || strings.Contains(stderr, "header)") || !strings.Contains(stderr, "no header and no columns") {
		t.Fatalf("validate, header: false, no fields: exit %d, %s", code, stderr)
	}
	rest, err := io.ReadAll(f)
	if err != nil || string(rest) != "k,v\na,1\n" {
		t.Fatalf("standard input after validate: %q, %v", rest, err)
	}
}

// The global flags (--log-level, -v) are taken before ctl, between ctl
// and ADDR, and after the command, and chosen as for every command: at
// info, ctl logs the answer.
func TestCtlGlobalFlags(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Write([]byte(`{"ok": true}`))
	}))
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	for _, c := range []struct {
		args []string
		code int
		log  bool // an info line on standard error
	}{
		{[]string{"ctl", addr, "scale", "1"}, 0, false},
		{[]string{"-v", "ctl", addr, "scale", "1"}, 0, true},
		{[]string{"--log-level", "info", "ctl", addr, "scale", "1"}, 0, true},
		{[]string{"ctl", "-v", addr, "status"}, 0, true},
		{[]string{"ctl", "--log-level", "info", addr, "status"}, 0, true},
		{[]string{"ctl", "--log-level=info", "--token", "x", addr, "status"}, 0, true},
		{[]string{"ctl", addr, "status", "-v"}, 0, true},
		{[]string{"ctl", addr, "rebalance", "--log-level", "error"}, 0, false},
		{[]string{"ctl", addr, "status", "--log-level", "loud"}, 2, false},
		{[]string{"-v", "ctl", addr, "status", "--log-level", "error"}, 2, false},
	} {
		code, out, stderr := cli(t, c.args...)
		logged := strings.Contains(stderr, "level=INFO msg=\"control answer\"")
		if code != c.code || logged != c.log || (code == 0 && out != "{\n  \"ok\": true\n}\n") {
			t.Errorf("streamd %s: exit %d, stdout %q, stderr %q; want exit %d, info line %v", strings.Join(c.args, " "), code, out, stderr, c.code, c.log)
		}
	}
}

// ctl names the command once in the endpoint's errors, which mostly name
// it already.
func TestCtlErrorPrefix(t *testing.T) {
	var answer string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.WriteHeader(http.StatusConflict)
		w.Write([]byte(answer))
	}))
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	for _, c := range []struct {
		args        []string
		error, want string
	}{
		{[]string{"rebalance", "--target", "0.5"}, "rebalance: target 0.5 is a skew", "rebalance: target 0.5 is a skew"},
		{[]string{"update", "win", "filter: x"}, "update win: refused", "update win: refused"},
		{[]string{"checkpoint"}, "checkpoint 4 timed out after 1m0s", "checkpoint 4 timed out after 1m0s"},
		{[]string{"status"}, "the job is not running", "status: the job is not running"},
		{[]string{"stop"}, "stopped already", "stop: stopped already"},
		{[]string{"scale", "2"}, "", "scale: 409 Conflict"},
	} {
		answer = `{"error": "` + c.error + `"}`
		if c.error == "" {
			answer = `{}`
		}
		args := append([]string{"ctl", addr}, c.args...)
		if code, _, stderr := cli(t, args...); code != 1 || stderr != "streamd: "+c.want+"\n" {
			t.Errorf("streamd %s: exit %d, stderr %q; want 1, %q", strings.Join(args, " "), code, stderr, "streamd: "+c.want+"\n")
		}
	}
}
