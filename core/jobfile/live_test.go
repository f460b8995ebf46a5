package jobfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"streamd/core/runtime"
	"streamd/snapshot"
)

// newestPosition is the source position of the newest complete checkpoint
// in ck, -1 if none.
func newestPosition(ck string) int64 {
	ms, _ := filepath.Glob(filepath.Join(ck, "*", snapshot.MetadataFile))
	pos := int64(-1)
	for _, m := range ms {
		if c, err := snapshot.Load(filepath.Dir(m), nil); err == nil {
			pos = max(pos, c.Meta.Sources["source"])
		}
	}
	return pos
}

// waitFor polls cond with a generous deadline (never a timing assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// A followed file under checkpoints: a checkpoint completes while the
// file is idle (the source's idle polls let barriers in), the job is
// interrupted, the file grows and is rotated by rename, and the restored
// run (ended by an idle timeout) gives every record exactly once, each
// key's records in file order.
func TestFollowCheckpointRestore(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.csv")
	var all []string
	n := 0
	write := func(path string, k int) {
		var b strings.Builder
		for range k {
			line := fmt.Sprintf("%c,%d", 'a'+n%3, n)
			fmt.Fprintln(&b, line)
			all = append(all, line)
			n++
		}
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(b.String())
		f.Close()
	}
	writeFile(t, in, "k,v\n")
	write(in, 6)
	job := func(extra string) string {
		return "source:\n  csv: {path: in.csv, follow: true, poll: 2ms" + extra + ", columns: {k: string, v: int64}}\n" +
			"sink:\n  csv: {path: out.csv}\ncheckpoint: {dir: ck, interval: 5ms}\n"
	}
	j := buildJobFile(t, dir, job(""), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := runtime.Run(ctx, j); done <- err }()
	ck := filepath.Join(dir, "ck")
	// No record is written while this waits: only idle polls inject it.
	waitFor(t, "a checkpoint at position 6 while the file is idle", func() bool { return newestPosition(ck) == 6 })
	write(in, 5)
	waitFor(t, "a checkpoint at position 11", func() bool { return newestPosition(ck) == 11 })
	write(in, 2) // read or not before the interrupt: the restore decides
	cancel()
	if err := <-done; !errors.Is(err, runtime.ErrInterrupted) {
		t.Fatalf("interrupted run: %v", err)
	}
	write(in, 3)
	if err := os.Rename(in, in+".1"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, in, "k,v\n")
	write(in, 4)
	j = buildJobFile(t, dir, job(", idle_timeout: 50ms"), Options{Restore: "latest"})
	if _, err := runtime.Run(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, filepath.Join(dir, "out.csv"))
	want := "k,v\n" + strings.Join(all, "\n") + "\n"
	if got != want {
		t.Fatalf("output\n%s\nwant each record once, in order:\n%s", got, want)
	}
}

// Live keys refused where they cannot work, at their line and column.
func TestLiveErrors(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.csv"), "k,v\na,1\n")
	writeFile(t, filepath.Join(dir, "a.csv.gz"), "")
	writeFile(t, filepath.Join(dir, "a.parquet"), "")
	for _, tc := range []struct{ src, want string }{
		{"stdin: {format: csv, follow: true}", "job.yaml:2:"},
		{"parquet: {path: a.parquet, follow: true}", "job.yaml:2:"},
		{"csv: {path: a.csv.gz, follow: true}", "job.yaml:2:15: source.csv.path: a.csv.gz names a gzip-compressed file, which cannot be read as it grows"},
		{"csv: {path: a.csv, follow: true, compression: zstd}", "source.csv.compression: a live input is read as it grows, so it cannot be zstd-compressed"},
		{"csv: {path: a.csv, follow: true, poll: 10}", "source.csv.poll: \"10\" is not a duration"},
		{"csv: {path: a.csv, follow: true, poll: 0s}", "source.csv.poll: poll must be between 1ms and 1h, not 0s"},
		{"csv: {path: a.csv, follow: true, idle_timeout: -1s}", "source.csv.idle_timeout: idle_timeout must be positive"},
		{"csv: {path: a.csv, poll: 1s}", "source.csv.poll: poll applies to a live input"},
		{"csv: {path: a.csv, watch: true}", "source.csv.watch: watch takes a directory or a glob pattern"},
		{"csv: {path: a.csv, follow: true, parallelism: 4}", "source.csv.parallelism: a live input is parsed by one reader"},
		{"json: {path: a.csv, follow: true, format: array, fields: {k: string}}", "source.json.format: follow reads JSON lines as they arrive"},
		{"csv: {path: a.csv, follow: true}\ndeterminism: strong", "source.csv.follow: determinism: strong (line 3) promises byte-identical output, but a live input"},
	} {
		err := buildText(t, dir, "source:\n  "+tc.src+"\nsink:\n  discard: {}\n", Options{Validate: true})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.src, err, tc.want)
		}
	}
}

// follow and watch are weak: Promise names them.
func TestLivePromise(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "in", "a.csv"), "k,v\na,1\n")
	for src, at := range map[string]string{
		"csv: {path: in/a.csv, follow: true}":                 "source.csv.follow",
		"jsonl: {path: in, watch: true, fields: {k: string}}": "source.jsonl.watch",
		"csv: {path: in/a.csv}":                               "",
	} {
		path := filepath.Join(dir, "job.yaml")
		writeFile(t, path, "source:\n  "+src+"\nsink:\n  discard: {}\n")
		f, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		p := f.Promise()
		got := ""
		if !p.Strong() {
			got = p.Weak[0].At
		}
		if got != at {
			t.Errorf("%s: weak at %q, want %q", src, got, at)
		}
	}
}
