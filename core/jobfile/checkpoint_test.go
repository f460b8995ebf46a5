package jobfile

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"streamd/core"
	"streamd/snapshot"
)

// A fresh run refuses a checkpoint directory that holds an unfinished
// run's checkpoints; --restore latest takes the newest valid one and drops
// the newer invalid ones, so that the resumed run can checkpoint again.
func TestCheckpointDirectoryStates(t *testing.T) {
	dir := t.TempDir()
	job := filepath.Join(dir, "job.yaml")
	os.WriteFile(job, []byte(`source:
  generator: {count: 1000}
sink:
  csv: {path: out.csv}
checkpoint: {dir: ck, interval: 1s}
`), 0o644)
	f, err := Load(job)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Build(Options{Restore: "latest"}); err == nil || !strings.Contains(err.Error(), "no checkpoint") {
		t.Fatalf("restore from an empty directory: %v", err)
	}
	store, _ := snapshot.Open(filepath.Join(dir, "ck"), 3, nil)
	for id := uint64(1); id <= 2; id++ {
		w, _ := store.Begin(id)
		if err := w.Commit(snapshot.Metadata{Sources: map[string]int64{"source": int64(id) * 10}}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = f.Build(Options{})
	if err == nil || !strings.Contains(err.Error(), "unfinished run") || !strings.Contains(err.Error(), "job.yaml:5:") {
		t.Fatalf("fresh run over old checkpoints: %v", err)
	}
	// Corrupt the newest: restore falls back to 1 and removes 2.
	os.WriteFile(filepath.Join(dir, "ck", snapshot.Name(2), snapshot.MetadataFile), []byte("{"), 0o644)
	var warnings, notes []string
	j, err := f.Build(Options{Restore: "latest", Warn: func(m string) { warnings = append(warnings, m) },
		Info: func(m string) { notes = append(notes, m) }})
	if err != nil {
		t.Fatal(err)
	}
	j.Source.Close()
	if j.Checkpoint.Restore.Meta.ID != 1 || len(warnings) != 1 || !strings.Contains(warnings[0], "skipping checkpoint") ||
		len(notes) != 1 || !strings.Contains(notes[0], "restoring from") {
		t.Fatalf("restored %d, warnings %q, notes %q", j.Checkpoint.Restore.Meta.ID, warnings, notes)
	}
	if n, _ := store.Count(); n != 1 {
		t.Fatalf("%d checkpoints after restoring from 1, want 1", n)
	}
}

// Two runs of a job cannot use one checkpoint directory at once: the
// second Build is refused (snapshot.ErrLocked's message at checkpoint.dir) until
// the first run is over (core.Run unlocks the store).
func TestCheckpointDirectoryLocked(t *testing.T) {
	dir := t.TempDir()
	job := filepath.Join(dir, "job.yaml")
	os.WriteFile(job, []byte("source:\n  generator: {count: 1000}\nsink:\n  discard: {}\ncheckpoint: {dir: ck, interval: 1s}\n"), 0o644)
	f, err := Load(job)
	if err != nil {
		t.Fatal(err)
	}
	first, err := f.Build(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Build(Options{}); err == nil || !strings.Contains(err.Error(), snapshot.ErrLocked.Error()) || !strings.Contains(err.Error(), "job.yaml:5:") {
		t.Fatalf("second run while the first holds the directory: %v", err)
	}
	if _, err := core.Run(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	again, err := f.Build(Options{})
	if err != nil {
		t.Fatalf("after the first run: %v", err)
	}
	again.Checkpoint.Store.Unlock()
	again.Source.Close()
}
