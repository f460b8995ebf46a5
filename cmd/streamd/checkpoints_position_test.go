package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"streamd/core"
	"streamd/core/jobfile"
	"streamd/core/runtime"
	"streamd/snapshot"
)

// lockedBuffer is a bytes.Buffer a run's log handler writes to from
// several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var errStopped = errors.New("stopped after the checkpoint")

// dueInBlock wraps a source read by source workers: reading block 1 it
// moves the checkpoint clock an interval on after the block's sixth batch,
// so that a checkpoint comes due inside block 1; reading block 2 it waits
// until a checkpoint has completed and fails the run, which leaves that
// checkpoint behind as a crash would.
type dueInBlock struct {
	core.Splittable
	clock     *atomic.Int64 // ns
	committed func() bool
}

func (s *dueInBlock) ReadBlock(ctx context.Context, b int, errs *core.ErrorPolicy, emit func(*core.Batch) error) error {
	if b == 2 {
		for !s.committed() {
			if err := ctx.Err(); err != nil {
				return err
			}
			time.Sleep(time.Millisecond) // waits for other goroutines, not for time
		}
		return errStopped
	}
	i := 0
	return s.Splittable.ReadBlock(ctx, b, errs, func(bt *core.Batch) error {
		if b == 1 && i == 6 {
			s.clock.Add(int64(time.Minute))
		}
		i++
		return emit(bt)
	})
}

// A checkpoint that source workers take inside block 1 of a CSV file (a
// source that does not count the records before a block) is shown at its
// block, not at "position 0" (which reads as the input's start), in the
// run's log line, in checkpoints list's POSITION column and in the
// restore message; and the restore resumes from it.
func TestCheckpointPositionInBlock(t *testing.T) {
	dir := t.TempDir()
	var in strings.Builder
	in.WriteString("seq,key,value\n")
	for i := 0; in.Len() < 2600<<10; i++ { // 3 blocks of 1 MiB
		fmt.Fprintf(&in, "%d,k%03d,%d\n", i, i*7%300, i%1000)
	}
	writeTestFile(t, filepath.Join(dir, "in.csv"), in.String())
	job := filepath.Join(dir, "job.yaml")
	writeTestFile(t, job, "source:\n  csv: {path: in.csv, columns: {seq: int64, key: string, value: int64}}\n"+
		"runtime: {ring_size: 4}\nregion:\n  channels: 2\n  key_by: [key]\n  ops:\n    - filter: value % 3 != 0\n"+
		"sink:\n  csv: {path: out.csv}\ncheckpoint: {dir: ck, interval: 1m}\n")

	// The run that stops after a checkpoint inside block 1.
	f, err := jobfile.Load(job)
	if err != nil {
		t.Fatal(err)
	}
	j, err := f.Build(jobfile.Options{SourceParallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	var clock atomic.Int64
	j.Checkpoint.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	var live atomic.Pointer[runtime.Live]
	onStart := runtime.OnStart(func(l runtime.Live) { live.Store(&l) })
	j.Source = &dueInBlock{Splittable: j.Source.(core.Splittable), clock: &clock,
		committed: func() bool { l := live.Load(); return l != nil && l.Snapshot().Checkpoints > 0 }}
	var log lockedBuffer
	j.Log = slog.New(slog.NewTextHandler(&log, nil))
	if _, err := runtime.Run(context.Background(), j, onStart); !errors.Is(err, errStopped) {
		t.Fatalf("the stopping run: %v", err)
	}
	ck := filepath.Join(dir, "ck")
	c, err := snapshot.Load(filepath.Join(ck, snapshot.Name(1)), nil)
	if err != nil {
		t.Fatal(err)
	}
	src := c.Meta.Sources
	if src["source"] != 0 || src["block"] != 1 || src["block_records"] <= 0 {
		t.Fatalf("checkpoint 1 at %v; want inside block 1 with source position 0", src)
	}
	want := fmt.Sprintf("block 1 + %d records", src["block_records"])

	if l := log.String(); !strings.Contains(l, "msg=checkpoint epoch=1 ") || !strings.Contains(l, ` position="`+want+`"`+"\n") {
		t.Errorf("log: want a checkpoint line with position=%q:\n%s", want, l)
	}

	code, out, stderr := cli(t, "checkpoints", "list", ck)
	lines := strings.Split(out, "\n")
	if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "ID  TIME  ") ||
		!strings.HasPrefix(lines[1], "1   ") || !strings.Contains(lines[1], "  "+want+"  ") || !strings.HasSuffix(lines[1], "  ok") {
		t.Errorf("checkpoints list: exit %d, stderr %q; want %q in checkpoint 1's row:\n%s", code, stderr, want, out)
	}

	code, _, stderr = cli(t, "run", job, "--restore", "latest", "--source-parallelism", "2", "--status-interval", "0")
	if msg := "streamd: restoring from " + filepath.Join(ck, snapshot.Name(1)) + " (source position " + want + ")\n"; code != 0 || !strings.Contains(stderr, msg) {
		t.Errorf("restore: exit %d; want %q in stderr:\n%s", code, msg, stderr)
	}
	// The restored run finished the job: every record with value % 3 != 0.
	got, err := os.ReadFile(filepath.Join(dir, "out.csv"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range strings.Count(in.String(), "\n") - 1 {
		if i%1000%3 != 0 {
			n++
		}
	}
	if lines := bytes.Count(got, []byte("\n")); lines != n+1 {
		t.Errorf("restored output: %d lines, want %d and a header", lines, n)
	}
}

// checkpoints list on a checkpoint directory that holds none says so,
// rather than printing the table's header alone.
func TestCheckpointsListEmpty(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := cli(t, "checkpoints", "list", dir)
	if want := "no checkpoints in " + dir + "\n"; code != 0 || out != want || stderr != "" {
		t.Errorf("checkpoints list on an empty directory: exit %d, stdout %q, stderr %q; want 0, %q", code, out, stderr, want)
	}
}
