package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The weak determinism contract on a live input (docs/ARCHITECTURE.md,
// "Determinism"): a followed file, appended to while the job
// runs, the job killed with SIGKILL three times after a checkpoint and
// restored with --restore latest each time. The final output holds every
// record of the file exactly once (nothing lost, nothing duplicated), and
// each key's records in the order they were written (per-key order),
// through a keyed region of 3 channels. Nothing here depends on timing:
// the writer and the kills go as fast as the machine lets them, the kills
// wait for a checkpoint to exist, and a run that ends on its own (its idle
// timeout passed while the machine was slow) is simply started again.
func TestLiveFileKillRestoreExactlyOnce(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "events.csv")
	if err := os.WriteFile(in, []byte("seq,key,v\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	job := filepath.Join(dir, "job.yaml")
	writeTestFile(t, job, `name: live
source:
  csv:
    path: events.csv
    follow: true
    poll: 5ms
    idle_timeout: 1500ms
    columns: {seq: int64, key: string, v: int64}
region:
  channels: 3
  key_by: [key]
  ops:
    - map: {w: "v * 2"}
checkpoint: {dir: ck, interval: 20ms, retain: 2}
sink:
  csv: {path: out/out.csv}
`)
	const total, keys = 30_000, 7
	f, err := os.OpenFile(in, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	written := 0
	write := func(n int) {
		var b strings.Builder
		for ; n > 0 && written < total; n-- {
			fmt.Fprintf(&b, "%d,k%d,%d\n", written, written%keys, written/keys)
			written++
		}
		if _, err := f.WriteString(b.String()); err != nil {
			t.Fatal(err)
		}
	}
	ckDir := filepath.Join(dir, "ck")
	kills, restores := 0, 0
	for run := 0; ; run++ {
		args := []string{"run", job, "--quiet"}
		if hasCheckpoint(ckDir) {
			args = append(args, "--restore", "latest")
			restores++
		}
		cmd := child(t, args...)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		if kills < 3 {
			// Write a share of the input, wait for a checkpoint taken by
			// this run (or the run's end), write more, then kill.
			write(total / 8)
			before := checkpointSet(ckDir)
			for len(done) == 0 && checkpointSet(ckDir) == before {
				time.Sleep(time.Millisecond)
			}
			write(total / 16)
			if len(done) == 0 {
				cmd.Process.Signal(syscall.SIGKILL)
				if err := <-done; err != nil {
					kills++
					continue
				}
			} else if err := <-done; err != nil {
				t.Fatalf("run %d: %v: %s", run, err, cmd.Stderr.(*bytes.Buffer).String())
			}
			continue // ended on its own (idle): start again
		}
		for written < total && len(done) == 0 {
			write(total / 16)
		}
		if err := <-done; err != nil {
			t.Fatalf("final run %d: %v: %s", run, err, cmd.Stderr.(*bytes.Buffer).String())
		}
		if written == total {
			break
		}
	}
	if restores == 0 {
		t.Fatal("no run restored from a checkpoint")
	}
	out, err := os.Open(filepath.Join(dir, "out", "out.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	sc := bufio.NewScanner(out)
	sc.Scan() // header
	if sc.Text() != "seq,key,v,w" {
		t.Fatalf("header %q", sc.Text())
	}
	seen := make([]int, total)
	last := map[string]int{}
	for sc.Scan() {
		p := strings.Split(sc.Text(), ",")
		seq, err := strconv.Atoi(p[0])
		if err != nil || seq < 0 || seq >= total || p[1] != fmt.Sprint("k", seq%keys) || p[3] != fmt.Sprint(2*(seq/keys)) {
			t.Fatalf("bad line %q", sc.Text())
		}
		seen[seq]++
		if l, ok := last[p[1]]; ok && seq <= l {
			t.Fatalf("key %s: record %d after %d: per-key order broken", p[1], seq, l)
		}
		last[p[1]] = seq
	}
	for seq, n := range seen {
		if n != 1 {
			t.Fatalf("record %d is in the output %d times (want exactly once); %d kills, %d restores", seq, n, kills, restores)
		}
	}
	t.Logf("%d records, %d kills, %d restores", total, kills, restores)
}

// checkpointSet names the completed checkpoints in dir.
func checkpointSet(dir string) string {
	names, _ := filepath.Glob(filepath.Join(dir, "chk-*"))
	return strings.Join(names, ",")
}
