package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"streamd/core/runtime"
	"streamd/internal/tier"
)

// controlJob is a keyed job with a stateless operator before the region
// (bucket), one in it (keep) and a window whose state moves when the
// channel count or the key-group table changes. keepExpr and bucketExpr
// are the two expressions; source the generator's extra settings.
func controlJob(dir, name, source, keepExpr, bucketExpr, extra string) string {
	return fmt.Sprintf(`name: %s
source:
  generator:
    seed: 7
    keys: 300
    step: 1ms
    start: 2026-01-01T00:00:00Z
%s
event_time:
  field: ts
pipeline:
  - name: bucket
    map:
      b: %q
region:
  channels: 2
  key_by: [key]
  elastic:
    policy: off
    max_channels: 4
  ops:
    - name: keep
      filter: %q
    - window:
        size: 1s
        aggregates:
          n: count
          total: sum(value)
          bs: sum(b)
sink:
  csv:
    path: %s
%s`, name, source, bucketExpr, keepExpr, filepath.Join(dir, name+".csv"), extra)
}

// controlRun is `streamd run` in this process, its control endpoint's
// address sent on addr once it listens (the line it prints), its exit
// code on done.
type controlRun struct {
	addr   string
	done   chan int
	stderr *syncBuffer
}

func startControlled(t *testing.T, args ...string) *controlRun {
	t.Helper()
	pr, pw := io.Pipe()
	cr := &controlRun{done: make(chan int, 1), stderr: &syncBuffer{}}
	root := newRoot()
	root.SetArgs(append([]string{"run", "--status-interval", "1h"}, args...))
	root.SetErr(io.MultiWriter(pw, cr.stderr))
	go func() {
		err := root.Execute()
		code := 0
		if ee, ok := err.(*exitError); ok {
			code = ee.code
		} else if err != nil {
			code = 2
		}
		pw.Close()
		cr.done <- code
	}()
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "streamd: control on http://"); ok {
			cr.addr = strings.TrimSuffix(a, "/v1/")
			break
		}
	}
	go io.Copy(io.Discard, pr)
	if cr.addr == "" {
		t.Fatalf("no control endpoint: %s", cr.stderr.String())
	}
	return cr
}

// post sends a control request and decodes the answer.
func post(t *testing.T, addr, token, command, query string, body string) (int, controlReply) {
	t.Helper()
	code, r, err := tryPost(t, addr, token, command, query, body)
	if err != nil {
		t.Fatal(err)
	}
	return code, r
}

// tryPost is post that returns a failed connection as an error: a request
// that races with the job's end may find the endpoint closed.
func tryPost(t *testing.T, addr, token, command, query string, body string) (int, controlReply, error) {
	t.Helper()
	u := "http://" + addr + "/v1/" + command
	if query != "" {
		u += "?" + query
	}
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, controlReply{}, err
	}
	defer resp.Body.Close()
	var r controlReply
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("%s: answer is not JSON: %v", command, err)
	}
	return resp.StatusCode, r, nil
}

// piecewise is the reference for a stream of updates of one expression:
// the first logic before the first position, each next one from its
// position on (positions are record indexes: the generator's seq).
func piecewise(first string, at []int64, next []string) string {
	if len(at) == 0 {
		return first
	}
	// Built from the back: seq < p1 ? e0 : (seq < p2 ? e1 : … en).
	tail := next[len(next)-1]
	for i := len(at) - 1; i >= 1; i-- {
		tail = fmt.Sprintf("(seq < %d ? %s : %s)", at[i], next[i-1], tail)
	}
	return fmt.Sprintf("(seq < %d ? %s : %s)", at[0], first, tail)
}

// TestControlRandomCommandsByteIdentical sends a seeded random stream of
// scale, rebalance and update commands over HTTP to a running job and
// compares its output byte for byte with a run without control whose
// expressions switch logic at the input positions the runtime reported
// for the updates (the old logic up to the sync point, the new one after
// it: docs/ARCHITECTURE.md, "Change of logic"). Both the single source
// stage (a rate-limited generator) and source workers (block boundaries)
// are covered.
func TestControlRandomCommandsByteIdentical(t *testing.T) {
	for _, tc := range []struct {
		name, source string
		args         []string
	}{
		// 3 s at the rate: room for the commands on a loaded machine.
		{"source stage", "    count: 150000\n    rate: 50000", nil},
		// Room for the commands: on a loaded 2-core machine the last of
		// 14 landed before record 270,000 of 400,000 (the long tier's).
		{"source workers", fmt.Sprintf("    count: %d", tier.Pick(250_000, 400_000)), []string{"--source-parallelism", "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			job := filepath.Join(dir, "job.yaml")
			writeTestFile(t, job, controlJob(dir, "live", tc.source, "value < 900", "value % 7", ""))
			cr := startControlled(t, append([]string{job, "--control-addr", "127.0.0.1:0"}, tc.args...)...)
			rnd := rand.New(rand.NewPCG(12, uint64(len(tc.name))))
			var keepAt, bucketAt []int64
			var keepNext, bucketNext []string
			updates := 0
		commands:
			for range 14 {
				var code int
				var r controlReply
				var err error
				switch k := rnd.IntN(4); k {
				case 0:
					code, r, err = tryPost(t, cr.addr, "", "scale", "", fmt.Sprintf(`{"channels": %d}`, 1+rnd.IntN(4)))
				case 1:
					code, r, err = tryPost(t, cr.addr, "", "rebalance", "", `{"target": 1.05}`)
				case 2:
					e := fmt.Sprintf("value < %d", 300+rnd.IntN(650))
					if code, r, err = tryPost(t, cr.addr, "", "update", "operator=keep", "filter: "+e); code == http.StatusOK {
						keepAt, keepNext = append(keepAt, r.Outcome.Position), append(keepNext, e)
					}
				case 3:
					e := fmt.Sprintf("value %% %d", 3+rnd.IntN(7))
					if code, r, err = tryPost(t, cr.addr, "", "update", "operator=bucket", fmt.Sprintf(`{"map": {"b": %q}}`, e)); code == http.StatusOK {
						bucketAt, bucketNext = append(bucketAt, r.Outcome.Position), append(bucketNext, e)
					}
				}
				switch {
				case err != nil:
					// The endpoint closed under the request: only the job's
					// end may do that, so it must not be answering as a
					// running job now (the exit code is checked below).
					if code, _, serr := tryPost(t, cr.addr, "", "status", "", ""); serr == nil && code == http.StatusOK {
						t.Fatalf("control request failed while the job runs: %v", err)
					}
					break commands
				case code == http.StatusServiceUnavailable:
					break commands // the job has ended
				case code != http.StatusOK:
					t.Fatalf("command refused: %d %s", code, r.Error)
				case r.Outcome.Kind == runtime.KindUpdate:
					updates++
					if r.Outcome.Position < 0 || r.Outcome.Seq == 0 {
						t.Fatalf("update without its sync point: %+v", r.Outcome)
					}
				}
			}
			if code := <-cr.done; code != 0 {
				t.Fatalf("controlled run: exit %d: %s", code, cr.stderr.String())
			}
			if tc.name == "source stage" && updates == 0 {
				t.Fatal("no update reached the rate-limited job")
			}
			ref := filepath.Join(dir, "ref.yaml")
			writeTestFile(t, ref, controlJob(dir, "ref", tc.source, piecewise("value < 900", keepAt, keepNext), piecewise("value % 7", bucketAt, bucketNext), ""))
			if code, _, stderr := cli(t, "run", ref, "--quiet"); code != 0 {
				t.Fatalf("reference run: exit %d: %s", code, stderr)
			}
			got, _ := os.ReadFile(filepath.Join(dir, "live.csv"))
			want, _ := os.ReadFile(filepath.Join(dir, "ref.csv"))
			if len(want) == 0 || !bytes.Equal(got, want) {
				t.Fatalf("%d updates (keep at %v, bucket at %v): output differs from the reference (%d vs %d bytes)", updates, keepAt, bucketAt, len(got), len(want))
			}
			t.Logf("%d updates; keep switched at %v, bucket at %v", updates, keepAt, bucketAt)
		})
	}
}

// TestControlRefusesMalformed sends malformed and refused requests to a
// running job whose endpoint wants a token: each gets a clear error, and
// the job's output is that of a run without control (nothing changed).
// Every refusal (409) is counted in status.refused and logged as
// "reconfiguration refused", whether the job loader's checks of an
// update's body or the running job refused it; malformed requests (400)
// are not.
func TestControlRefusesMalformed(t *testing.T) {
	dir := t.TempDir()
	job := filepath.Join(dir, "job.yaml")
	// 4 s at the rate: room for the requests on a loaded machine.
	writeTestFile(t, job, controlJob(dir, "live", "    count: 100000\n    rate: 25000", "value < 900", "value % 7", ""))
	const token = "s3cret"
	cr := startControlled(t, job, "--control-addr", "127.0.0.1:0", "--control-token", token)
	refusals := map[string]int64{}
	for _, c := range []struct {
		command, query, body string
		token                string
		code                 int
		want                 string
	}{
		{"status", "", "", "", http.StatusUnauthorized, "missing or wrong token"},
		{"status", "", "", "wrong", http.StatusUnauthorized, "missing or wrong token"},
		{"scale", "", `{"channels": 3`, token, http.StatusBadRequest, "malformed JSON"},
		{"scale", "", `{"chanels": 3}`, token, http.StatusBadRequest, `unknown field "chanels"`},
		{"scale", "", `{"channels": 2}{"x":1}`, token, http.StatusBadRequest, "data after the JSON object, from byte 15 on"},
		{"scale", "", "{\"channels\": 2}\n[", token, http.StatusBadRequest, "data after the JSON object"},
		{"frobnicate", "", "", token, http.StatusNotFound, `unknown command "frobnicate"`},
		{"scale", "", `{"channels": 9}`, token, http.StatusConflict, "scale to 9 channels: this region runs with 1 to 4"},
		{"scale", "", `{"channels": 0}`, token, http.StatusConflict, "scale to 0 channels"},
		{"update", "operator=keep", "filter: value < \"x\"", token, http.StatusBadRequest, "request:1:15: filter: invalid operation"},
		{"update", "operator=keep", "filter: value <", token, http.StatusBadRequest, "request:1:"},
		{"update", "operator=keep", "{\"map\": {\"x\": \"1\"}}", token, http.StatusBadRequest, "operator keep is a filter"},
		{"update", "operator=nope", "filter: true", token, http.StatusConflict, `no operator named "nope"`},
		{"update", "operator=bucket", `{"map": {"b": "value > 3"}}`, token, http.StatusConflict, "changes its output"},
		{"update", "operator=region.ops[1].window", "window: {size: 2s, aggregates: {n: count}}", token, http.StatusConflict, "would change its state layout"},
		{"update", "operator=region.ops[1].window", "window: {size: 2s, aggregates: {n: count, total: sum(value), bs: sum(b)}}", token, http.StatusConflict, "size (1s → 2s)"},
		{"update", "operator=region.ops[1].window", "window: {size: 1s, aggregates: {n: count, total: max(value), bs: sum(b)}}", token, http.StatusConflict, "aggregates ("},
		{"update", "operator=region.ops[1].window", "window: {size: 1s, local_aggregation: auto, aggregates: {n: count, total: sum(value), bs: sum(b)}}", token, http.StatusConflict, "local_aggregation (off → auto)"},
		{"update", "operator=keep", "filter: value < 600\nextra: 1", token, http.StatusBadRequest, `request:2:1: unknown field "extra" (expected one of name, filter)`},
		{"update", "operator=region.ops[1].window", "window: {size: 1s, sise: 2s, aggregates: {n: count}}", token, http.StatusBadRequest, `unknown field "sise" (expected one of key, size, slide,`},
		{"checkpoint", "", "", token, http.StatusConflict, "no checkpointing"},
		{"stop", "", `{"savepoint": true}`, token, http.StatusConflict, "needs checkpointing"},
	} {
		code, r := post(t, cr.addr, c.token, c.command, c.query, c.body)
		if code != c.code || !strings.Contains(r.Error, c.want) {
			t.Errorf("%s %s %q: got %d %q, want %d with %q", c.command, c.query, c.body, code, r.Error, c.code, c.want)
		}
		if code == http.StatusConflict {
			refusals[c.command]++
			if r.Outcome == nil || r.Outcome.Err != r.Error {
				t.Errorf("%s %s %q: refused without its log entry: %+v", c.command, c.query, c.body, r.Outcome)
			}
		}
	}
	// The scheme's name is case-insensitive (RFC 9110 section 11.1).
	for _, auth := range []string{"bearer " + token, "BEARER " + token, "Bearer " + token} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+cr.addr+"/v1/status", nil)
		req.Header.Set("Authorization", auth)
		if resp, err := http.DefaultClient.Do(req); err != nil {
			t.Fatal(err)
		} else if resp.Body.Close(); resp.StatusCode != http.StatusOK {
			t.Errorf("Authorization: %s: %d, want 200", strings.Fields(auth)[0], resp.StatusCode)
		}
	}
	// A command that takes POST, asked with GET: 405 and Allow.
	req, _ := http.NewRequest(http.MethodGet, "http://"+cr.addr+"/v1/scale", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET /v1/scale: %d, Allow %q; want 405, Allow POST", resp.StatusCode, resp.Header.Get("Allow"))
	}
	code, r := post(t, cr.addr, token, "status", "", "")
	if code != http.StatusOK || r.Plan == nil {
		t.Fatalf("status: %d %s", code, r.Error)
	}
	if p := r.Plan; p.Channels != 2 || len(p.Counts) != 0 || !maps.Equal(p.Refused, refusals) {
		t.Errorf("after refused requests: channels %d, carried out %v, refused %v; want 2 channels, none carried out, refused %v (every 409)", p.Channels, p.Counts, p.Refused, refusals)
	}
	total := int64(0)
	for _, n := range refusals {
		total += n
	}
	if n := int64(strings.Count(cr.stderr.String(), `msg="reconfiguration refused"`)); n != total {
		t.Errorf("%d reconfiguration refused log lines, want one per refusal (%d)", n, total)
	}
	if code := <-cr.done; code != 0 {
		t.Fatalf("exit %d: %s", code, cr.stderr.String())
	}
	ref := filepath.Join(dir, "ref.yaml")
	writeTestFile(t, ref, controlJob(dir, "ref", "    count: 100000", "value < 900", "value % 7", ""))
	if code, _, stderr := cli(t, "run", ref, "--quiet"); code != 0 {
		t.Fatalf("reference run: exit %d: %s", code, stderr)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "live.csv"))
	want, _ := os.ReadFile(filepath.Join(dir, "ref.csv"))
	if len(want) == 0 || !bytes.Equal(got, want) {
		t.Fatal("refused requests changed the job's output")
	}
}

// TestControlAddrNeedsToken: a non-loopback bind without a token is a
// usage error, before anything runs.
func TestControlAddrNeedsToken(t *testing.T) {
	dir := t.TempDir()
	job := filepath.Join(dir, "job.yaml")
	writeTestFile(t, job, controlJob(dir, "live", "    count: 10", "value < 900", "value % 7", ""))
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:7000", ":0x"} {
		code, _, stderr := cli(t, "run", job, "--control-addr", addr)
		if code != 2 || !strings.Contains(stderr, "--control-addr") {
			t.Errorf("--control-addr %s: exit %d, %q; want 2 and why", addr, code, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "live.csv")); err == nil {
		t.Error("the job ran")
	}
	if a, err := controlListenAddr(":7000", ""); err != nil || a != "127.0.0.1:7000" {
		t.Errorf(":7000 binds %q, %v; want 127.0.0.1:7000", a, err)
	}
	// Host names are case-insensitive: localhost in any case is loopback.
	for _, addr := range []string{"localhost:7000", "LOCALHOST:7000", "LocalHost:7000"} {
		if _, err := controlListenAddr(addr, ""); err != nil {
			t.Errorf("%s: %v; want loopback, no token needed", addr, err)
		}
	}
	if code, _, stderr := cli(t, "run", job, "--quiet", "--control-addr", "LOCALHOST:0"); code != 0 {
		t.Errorf("--control-addr LOCALHOST:0 without a token: exit %d, %q; want 0 (loopback)", code, stderr)
	}
}

// TestStopSavepointRestore stops a running job (the real binary) with
// stop --savepoint, checks the exit code (3) and that --restore latest
// then finishes it with the output of an uninterrupted run.
// The update made before the savepoint is in force after the restore.
func TestStopSavepointRestore(t *testing.T) {
	dir := t.TempDir()
	ck := "checkpoint:\n  dir: " + filepath.Join(dir, "ck") + "\n  interval: 1h\n"
	job := filepath.Join(dir, "job.yaml")
	writeTestFile(t, job, controlJob(dir, "live", "    count: 120000\n    rate: 80000", "value < 900", "value % 7", ck))
	cmd := exec.Command(os.Args[0], "run", job, "--control-addr", "127.0.0.1:0", "--status-interval", "1h")
	cmd.Env = append(os.Environ(), "STREAMD_TEST_CHILD=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	sc := bufio.NewScanner(stderr)
	addr := ""
	for addr == "" && sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if a, ok := strings.CutPrefix(sc.Text(), "streamd: control on http://"); ok {
			addr = strings.TrimSuffix(a, "/v1/")
		}
	}
	if addr == "" {
		cmd.Wait()
		t.Fatalf("no control endpoint: %s", log.String())
	}
	// A change of logic before the savepoint: the restored run must keep
	// it (the checkpoint records it), not go back to the job file's.
	code, u := post(t, addr, "", "update", "operator=keep", "filter: value < 300")
	if code != http.StatusOK || u.Outcome == nil {
		t.Fatalf("update: %d %s", code, u.Error)
	}
	code, r := post(t, addr, "", "stop", "", `{"savepoint": true}`)
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
	}
	err = cmd.Wait()
	if code != http.StatusOK || r.Outcome == nil || r.Outcome.Epoch == 0 {
		t.Fatalf("stop --savepoint: %d %s: %s", code, r.Error, log.String())
	}
	if cmd.ProcessState.ExitCode() != exitStopped || !strings.Contains(log.String(), "--restore latest resumes it") {
		t.Fatalf("stopped run: %v, want exit %d and how to resume: %s", err, exitStopped, log.String())
	}
	if code, _, stderr := cli(t, "run", job, "--quiet", "--restore", "latest"); code != 0 {
		t.Fatalf("restored run: exit %d: %s", code, stderr)
	}
	ref := filepath.Join(dir, "ref.yaml")
	writeTestFile(t, ref, controlJob(dir, "ref", "    count: 120000", piecewise("value < 900", []int64{u.Outcome.Position}, []string{"value < 300"}), "value % 7", ""))
	if code, _, stderr := cli(t, "run", ref, "--quiet"); code != 0 {
		t.Fatalf("reference run: exit %d: %s", code, stderr)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "live.csv"))
	want, _ := os.ReadFile(filepath.Join(dir, "ref.csv"))
	if len(want) == 0 || !bytes.Equal(got, want) {
		t.Fatalf("updated at %d, stopped at epoch %d and restored: output differs from an uninterrupted run with the update (%d vs %d bytes)", u.Outcome.Position, r.Outcome.Epoch, len(got), len(want))
	}
}

// TestUpdateByPath: an operator with a name: is updated by its path too
// (docs/CONTROL.md, "update": NAME is the operator's name: or its path),
// and the answer's outcome names the operator.
func TestUpdateByPath(t *testing.T) {
	dir := t.TempDir()
	job := filepath.Join(dir, "job.yaml")
	writeTestFile(t, job, controlJob(dir, "live", "    count: 100000\n    rate: 25000", "value < 900", "value % 7", ""))
	cr := startControlled(t, job, "--control-addr", "127.0.0.1:0")
	code, r := post(t, cr.addr, "", "update", "operator=region.ops[0].filter", "filter: value < 500")
	if code != http.StatusOK || r.Outcome == nil || r.Outcome.Inputs["operator"] != "keep" {
		t.Errorf("update region.ops[0].filter (named keep): got %d %q, want 200 for keep", code, r.Error)
	}
	if code := <-cr.done; code != 0 {
		t.Fatalf("exit %d: %s", code, cr.stderr.String())
	}
}
