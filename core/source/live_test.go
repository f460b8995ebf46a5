package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"streamd/core"
)

// The live tests write real files while the source reads them; they never
// assert timing: they poll (Next) until a condition holds, with a generous
// deadline that only a hung source reaches.

const livePoll = 2 * time.Millisecond

// liveRecords reads s until it has want records in all (or the deadline),
// and returns them as "k=v@line" (line with the file ordinal, if any, as
// "f:line").
func liveRecords(t *testing.T, s core.Source, want int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []string
	for len(got) < want {
		b, err := s.Next(ctx)
		if errors.Is(err, core.ErrIdle) {
			continue
		}
		if err != nil {
			t.Fatalf("after %d records %v: %v", len(got), got, err)
		}
		got = append(got, rows(b)...)
		b.Release()
	}
	return got
}

func rows(b *core.Batch) []string {
	var out []string
	w := b.Schema.Width()
	for i := 0; i < b.Len; i++ {
		pos := fmt.Sprint(core.PosLine(b.Pos[i]))
		if f := b.Pos[i] >> core.PosFileShift; f > 0 {
			pos = fmt.Sprintf("%d:%s", f, pos)
		}
		out = append(out, fmt.Sprintf("%s=%d@%s", b.Vals[i*w].Str(), b.Vals[i*w+1].Int(), pos))
	}
	return out
}

// idleOnce says that s has nothing now: Next returns ErrIdle.
func idleOnce(t *testing.T, s core.Source) {
	t.Helper()
	b, err := s.Next(context.Background())
	if !errors.Is(err, core.ErrIdle) {
		if b != nil {
			t.Fatalf("Next: records %v, want none yet", rows(b))
		}
		t.Fatalf("Next: %v, want ErrIdle", err)
	}
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func follow(t *testing.T, path string) core.Source {
	t.Helper()
	s, err := LiveCSV(path, CSVOptions{Header: true, Columns: kv}, LiveOptions{Follow: true, Poll: livePoll}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func equal(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("records\n got %v\nwant %v", got, want)
	}
}

// TestFollowGrowth: a followed file appended in several writes, one of
// them ending inside a line (and inside a quoted field with a newline in
// it): a partial line is no record until its newline arrives, and every
// record comes once, in order, with its line.
func TestFollowGrowth(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.csv")
	appendFile(t, path, "k,v\na,1\nb,2\n")
	s := follow(t, path)
	equal(t, liveRecords(t, s, 2), []string{"a=1@2", "b=2@3"})
	appendFile(t, path, "c,3")
	idleOnce(t, s) // "c,3" has no newline yet
	appendFile(t, path, "0\n\"d\n")
	equal(t, liveRecords(t, s, 1), []string{"c=30@4"})
	appendFile(t, path, "x\",4\ne,5\n")
	equal(t, liveRecords(t, s, 2), []string{"d\nx=4@5", "e=5@7"})
	idleOnce(t, s)
}

// TestFollowRotateRename: the followed path is renamed away (with a line
// written to the old file after the rename) and a new file created under
// the path: the old file is finished, its last line without a newline
// included, then the new one is read from its start (header included).
func TestFollowRotateRename(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.csv")
	appendFile(t, path, "k,v\na,1\n")
	s := follow(t, path)
	equal(t, liveRecords(t, s, 1), []string{"a=1@2"})
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	appendFile(t, path+".1", "b,2\nc,3") // the writer had not reopened yet
	appendFile(t, path, "k,v\nd,4\n")
	equal(t, liveRecords(t, s, 3), []string{"b=2@3", "c=3@4", "d=4@1:2"})
	if n := s.(*liveSource).rotations; n != 1 {
		t.Fatalf("rotations %d, want 1", n)
	}
}

// TestFollowTruncate: a followed file truncated (copytruncate) and written
// again is read again from its start, counted.
func TestFollowTruncate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.csv")
	appendFile(t, path, "k,v\na,1\nb,2\n")
	s := follow(t, path)
	equal(t, liveRecords(t, s, 2), []string{"a=1@2", "b=2@3"})
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	idleOnce(t, s)
	appendFile(t, path, "k,v\nc,3\n")
	equal(t, liveRecords(t, s, 1), []string{"c=3@1:2"})
	if n := s.(*liveSource).truncations; n != 1 {
		t.Fatalf("truncations %d, want 1", n)
	}
}

// TestWatchDirectory: a watched directory's files are read in name order,
// then files that appear (written under a hidden name and renamed in), each
// once, complete: a last line without newline is a record.
func TestWatchDirectory(t *testing.T) {
	dir := t.TempDir()
	appendFile(t, filepath.Join(dir, "b.csv"), "k,v\nb,2\n")
	appendFile(t, filepath.Join(dir, "a.csv"), "k,v\na,1\n")
	s, err := LiveCSV(dir, CSVOptions{Header: true, Columns: kv}, LiveOptions{Watch: true, Poll: livePoll}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	equal(t, liveRecords(t, s, 2), []string{"a=1@2", "b=2@1:2"})
	idleOnce(t, s)
	tmp := filepath.Join(dir, ".c.csv")
	appendFile(t, tmp, "k,v\nc,3\nd,4")
	idleOnce(t, s) // hidden: not taken
	if err := os.Rename(tmp, filepath.Join(dir, "c.csv")); err != nil {
		t.Fatal(err)
	}
	equal(t, liveRecords(t, s, 2), []string{"c=3@2:2", "d=4@2:3"})
	idleOnce(t, s)
}

// TestFollowResume: a checkpoint's state resumes exactly where it was
// taken while the file only grew, and in the old file found by its inode
// after a rotation by rename; a file gone or truncated since is refused.
func TestFollowResume(t *testing.T) {
	resume := func(t *testing.T, path, state string, n int64) (core.Source, error) {
		s, err := LiveCSV(path, CSVOptions{Header: true, Columns: kv}, LiveOptions{Follow: true, Poll: livePoll}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		r := core.NewReplayable(s)
		if err := s.(core.Resumer).Resume(state); err != nil {
			return nil, err
		}
		if err := r.Skip(n); err != nil {
			t.Fatal(err)
		}
		return r, nil
	}
	setup := func(t *testing.T) (string, string) {
		path := filepath.Join(t.TempDir(), "app.csv")
		appendFile(t, path, "k,v\na,1\nb,2\n")
		s := follow(t, path)
		equal(t, liveRecords(t, s, 2), []string{"a=1@2", "b=2@3"})
		appendFile(t, path, "x,9\n") // read in a second range: the state's From is after b
		equal(t, liveRecords(t, s, 1), []string{"x=9@4"})
		st, err := s.(core.Resumer).ResumeState()
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		return path, st
	}
	t.Run("grown", func(t *testing.T) {
		path, st := setup(t)
		appendFile(t, path, "c,3\n")
		r, err := resume(t, path, st, 3)
		if err != nil {
			t.Fatal(err)
		}
		equal(t, liveRecords(t, r, 1), []string{"c=3@5"})
	})
	t.Run("rotated", func(t *testing.T) {
		path, st := setup(t)
		appendFile(t, path, "c,3\n")
		os.Rename(path, path+".1")
		appendFile(t, path, "k,v\nd,4\n")
		r, err := resume(t, path, st, 3)
		if err != nil {
			t.Fatal(err)
		}
		equal(t, liveRecords(t, r, 2), []string{"c=3@5", "d=4@1:2"})
	})
	t.Run("gone", func(t *testing.T) {
		path, st := setup(t)
		// A new file renamed over the path: the old one (and its inode) is
		// gone, with whatever was written to it after the checkpoint.
		appendFile(t, path+".new", "k,v\nd,4\n")
		if err := os.Rename(path+".new", path); err != nil {
			t.Fatal(err)
		}
		if _, err := resumeAndRead(t, path, st, 3); err == nil || !strings.Contains(err.Error(), "is gone") {
			t.Fatalf("restore after the file was replaced: %v, want an error saying it is gone", err)
		}
	})
	t.Run("truncated", func(t *testing.T) {
		path, st := setup(t)
		os.Truncate(path, 0)
		appendFile(t, path, "k,v\n")
		if _, err := resumeAndRead(t, path, st, 3); err == nil || !strings.Contains(err.Error(), "truncated") {
			t.Fatalf("restore after truncation: %v, want an error saying it was truncated", err)
		}
	})
}

// resumeAndRead resumes a followed path from state at position n and
// reads once: the error of the resume, if any.
func resumeAndRead(t *testing.T, path, state string, n int64) (*core.Batch, error) {
	s, err := LiveCSV(path, CSVOptions{Header: true, Columns: kv}, LiveOptions{Follow: true, Poll: livePoll}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := core.NewReplayable(s)
	if err := s.(core.Resumer).Resume(state); err != nil {
		return nil, err
	}
	r.Skip(n)
	return r.Next(context.Background())
}

// TestLiveIdleTimeout: with an idle timeout the input ends after no
// record for that long, its last line without newline a record.
func TestLiveIdleTimeout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.jsonl")
	appendFile(t, path, `{"k":"a","v":1}`+"\n"+`{"k":"b","v":2}`)
	s, err := LiveJSON("jsonl", path, jsonlOptions(kv), LiveOptions{Follow: true, Poll: livePoll, IdleTimeout: 10 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []string
	for {
		b, err := s.Next(ctx)
		if errors.Is(err, core.ErrIdle) {
			continue
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rows(b)...)
		b.Release()
	}
	equal(t, got, []string{"a=1@1", "b=2@2"})
}
