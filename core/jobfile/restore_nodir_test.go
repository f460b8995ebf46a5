package jobfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"streamd/snapshot"
)

// A refused restore creates nothing: --restore latest (or a checkpoint
// path that is not one) with a checkpoint.dir that does not exist fails
// without making the directory or its lock file.
func TestRestoreMissingDirCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	job := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(job, []byte(`source:
  generator: {count: 1000}
sink:
  csv: {path: out.csv}
checkpoint: {dir: ck/nested, interval: 1s}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(job)
	if err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "ck", "nested")
	for _, restore := range []string{"latest", filepath.Join(ck, snapshot.Name(4))} {
		_, err := f.Build(Options{Restore: restore})
		if err == nil {
			t.Fatalf("--restore %s: built", restore)
		}
		if restore == "latest" {
			want := "--restore latest: no checkpoint in " + ck + " to resume from; run without --restore to start afresh"
			if !errors.Is(err, snapshot.ErrNoCheckpoint) || err.Error() != want {
				t.Fatalf("--restore latest: %v\nwant %s", err, want)
			}
		} else if !strings.HasPrefix(err.Error(), "restore: ") || !errors.Is(err, snapshot.ErrCorrupt) {
			t.Fatalf("--restore %s: %v", restore, err)
		}
		for _, p := range []string{ck, filepath.Join(dir, "ck")} {
			if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("--restore %s: %s exists after the refused restore (%v)", restore, p, err)
			}
		}
	}
}
