package jobfile

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"streamd/core"
	"streamd/core/plan"
	"streamd/core/runtime"
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
// the first run is over (runtime.Run unlocks the store).
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
	var warnings []string
	if _, err := f.Build(Options{Validate: true, Warn: func(m string) { warnings = append(warnings, m) }}); err != nil ||
		len(warnings) != 1 || !strings.Contains(warnings[0], "in use by a running job") {
		t.Fatalf("validate while a run holds the directory: %v, warnings %q", err, warnings)
	}
	if _, err := runtime.Run(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	again, err := f.Build(Options{})
	if err != nil {
		t.Fatalf("after the first run: %v", err)
	}
	again.Checkpoint.Store.Unlock()
	again.Source.Close()
}

// The source and sink a checkpoint records leave out what a restored run
// may change (a generator's count and rate, CSV parsing parallelism) and
// keep the rest (a seed, a sink's format).
func TestCheckpointIOStates(t *testing.T) {
	states := func(src, sink string) (string, string) {
		f, err := Parse("job.yaml", []byte("source:\n  "+src+"\nsink:\n  "+sink+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Build(Options{Validate: true}); err != nil {
			t.Fatal(err)
		}
		return f.ioStates()
	}
	a, x := states("generator: {seed: 3, count: 10, rate: 100}", "csv: {path: o.csv}")
	if b, y := states("generator: {seed: 3, count: 20, rate: 900}", "csv: {path: o.csv}"); a != b || x != y {
		t.Errorf("count and rate changed the description: %s vs %s", a, b)
	}
	if b, _ := states("generator: {seed: 4, count: 10, rate: 100}", "csv: {path: o.csv}"); a == b {
		t.Errorf("another seed, the same description %s", a)
	}
	if _, y := states("generator: {seed: 3, count: 10}", "jsonl: {path: o.csv}"); x == y || !strings.HasPrefix(x, `{"csv":`) {
		t.Errorf("sinks %s and %s", x, y)
	}
	// A sink's defaults spelled out, or its path written another way, is
	// the same sink; another header setting is not.
	if _, y := states("generator: {seed: 3, count: 10}", `csv: {path: ./o.csv, header: true, delimiter: ","}`); x != y {
		t.Errorf("defaults spelled out: %s vs %s", x, y)
	}
	if _, y := states("generator: {seed: 3, count: 10}", "csv: {path: o.csv, header: false}"); x == y {
		t.Errorf("header off, the same description %s", x)
	}
	abs, _ := filepath.Abs("o.csv")
	if x != `{"csv":{"delimiter":",","header":true,"path":"`+abs+`"}}` {
		t.Errorf("sink description %s", x)
	}
	// The same file by its absolute path; generator defaults and durations
	// by value.
	if _, y := states("generator: {seed: 3, count: 10}", "csv: {path: "+abs+"}"); x != y {
		t.Errorf("absolute path: %s vs %s", x, y)
	}
	if b, _ := states("generator: {seed: 3, step: 1000us, distribution: uniform, keys: 1000, start: 1970-01-01T00:00:00Z}", "csv: {path: o.csv}"); a != b {
		t.Errorf("generator defaults spelled out: %s vs %s", a, b)
	}
	// Event time belongs to the source's description: it decides which
	// records are late.
	e1, _ := states("generator: {seed: 3}\nevent_time: {field: ts}", "discard: {}")
	e2, _ := states("generator: {seed: 3}\nevent_time: {field: ts, max_out_of_orderness: 1s}", "discard: {}")
	if e1 == e2 || !strings.Contains(e2, `"max_out_of_orderness":"1s"`) {
		t.Errorf("event time: %s vs %s", e1, e2)
	}
	if e3, _ := states("generator: {seed: 3}\nevent_time: {field: ts, max_out_of_orderness: 1000ms}", "discard: {}"); e3 != e2 {
		t.Errorf("1000ms vs 1s: %s vs %s", e3, e2)
	}
	in := filepath.Join(t.TempDir(), "in.csv")
	os.WriteFile(in, []byte("a\n1\n"), 0o644)
	c, _ := states("csv: {path: "+in+", parallelism: 1}", "discard: {}")
	if d, _ := states("csv: {path: "+in+", parallelism: 4}", "discard: {}"); c != d {
		t.Errorf("parallelism changed the description: %s vs %s", c, d)
	}
	// The unclosed-quote limits and max_ahead decide which records are
	// read and which are late; left out, they are not in the description,
	// so checkpoints of jobs written before them restore.
	if d, _ := states("csv: {path: "+in+", max_quoted_lines: 50}", "discard: {}"); c == d || strings.Contains(c, "max_quoted") {
		t.Errorf("max_quoted_lines: %s vs %s", c, d)
	}
	if e4, _ := states("generator: {seed: 3}\nevent_time: {field: ts, max_ahead: 24h}", "discard: {}"); e4 == e1 || strings.Contains(e1, "max_ahead") || !strings.Contains(e4, `"max_ahead":"24h0m0s"`) {
		t.Errorf("max_ahead: %s vs %s", e1, e4)
	}
}

// --restore latest skips a checkpoint whose committed output was damaged
// since (a part truncated) for the newest one whose kept parts are
// intact, which rewinds the source to before the damaged part; with none
// left it fails naming the part.
func TestRestoreSkipsDamagedOutput(t *testing.T) {
	dir := t.TempDir()
	job := filepath.Join(dir, "job.yaml")
	os.WriteFile(job, []byte("source:\n  generator: {count: 1000}\nsink:\n  csv: {path: out.csv}\ncheckpoint: {dir: ck, interval: 1s}\n"), 0o644)
	f, err := Load(job)
	if err != nil {
		t.Fatal(err)
	}
	parts := filepath.Join(dir, "out.csv.parts")
	os.MkdirAll(parts, 0o755)
	var manifest []byte
	store, _ := snapshot.Open(filepath.Join(dir, "ck"), 3, nil)
	for id := uint64(1); id <= 2; id++ {
		data := []byte(strings.Repeat("x,1\n", int(id)))
		os.WriteFile(filepath.Join(parts, fmt.Sprintf("epoch-%012d", id)), data, 0o644)
		manifest = fmt.Appendf(manifest, "%d %d %08x\n", id, len(data), crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)))
		w, _ := store.Begin(id)
		if err := w.WriteParts(core.OutputManifestFile, [][]byte{manifest}); err != nil {
			t.Fatal(err)
		}
		if err := w.Commit(snapshot.Metadata{ID: id, Sources: map[string]int64{"source": int64(id) * 10}}); err != nil {
			t.Fatal(err)
		}
	}
	build := func() (*plan.Job, []string, error) {
		var warnings []string
		j, err := f.Build(Options{Restore: "latest", Warn: func(m string) { warnings = append(warnings, m) }})
		if err == nil {
			j.Source.Close()
			j.Checkpoint.Store.Unlock()
		}
		return j, warnings, err
	}
	j, warnings, err := build()
	if err != nil || j.Checkpoint.Restore.Meta.ID != 2 || len(warnings) != 0 {
		t.Fatalf("intact output: restored %v, warnings %q, err %v", j, warnings, err)
	}
	os.Truncate(filepath.Join(parts, "epoch-000000000002"), 2)
	j, warnings, err = build()
	if err != nil || j.Checkpoint.Restore.Meta.ID != 1 || len(warnings) != 1 ||
		!strings.Contains(warnings[0], core.ErrOutputDamaged.Error()) || !strings.Contains(warnings[0], "epoch-000000000002") {
		t.Fatalf("part 2 truncated: restored %v, warnings %q, err %v", j, warnings, err)
	}
	os.Remove(filepath.Join(parts, "epoch-000000000001"))
	if _, _, err = build(); !errors.Is(err, core.ErrOutputDamaged) || !strings.Contains(err.Error(), "epoch-000000000001") {
		t.Fatalf("part 1 missing too: err %v", err)
	}
}

// A job whose sink changed since its checkpoints is refused as not fitting
// them (plan.ErrCheckpointMismatch) — with --restore latest too, where the
// missing output of the new sink path would otherwise look like damage —
// and a refused --restore DIR creates no checkpoint directory.
func TestRestoreRefusesChangedSink(t *testing.T) {
	dir := t.TempDir()
	job := func(name, out, ck string) *File {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte("source:\n  generator: {count: 1000}\nsink:\n  csv: {path: "+out+"}\ncheckpoint: {dir: "+ck+", interval: 1s}\n"), 0o644)
		f, err := Load(p)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	old := job("old.yaml", "out.csv", "ck")
	_, sinkWas := old.ioStates()
	store, _ := snapshot.Open(filepath.Join(dir, "ck"), 3, nil)
	w, _ := store.Begin(1)
	if err := w.WriteParts(core.OutputManifestFile, [][]byte{[]byte("1 4 00000000\n")}); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(snapshot.Metadata{ID: 1, Sources: map[string]int64{"source": 10}, Extra: map[string]string{"sink": sinkWas}}); err != nil {
		t.Fatal(err)
	}
	moved := job("moved.yaml", "elsewhere.csv", "ck")
	_, err := moved.Build(Options{Restore: "latest"})
	if !errors.Is(err, plan.ErrCheckpointMismatch) || errors.Is(err, core.ErrOutputDamaged) || !strings.Contains(err.Error(), "elsewhere.csv") {
		t.Fatalf("--restore latest into another sink path: %v", err)
	}
	fresh := job("fresh.yaml", "elsewhere.csv", "ck2")
	_, err = fresh.Build(Options{Restore: filepath.Join(dir, "ck", snapshot.Name(1))})
	if !errors.Is(err, plan.ErrCheckpointMismatch) {
		t.Fatalf("--restore DIR into another sink path: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ck2")); !os.IsNotExist(err) {
		t.Fatalf("a refused restore created the checkpoint directory: %v", err)
	}
}

// A generator's count below a checkpoint's position skips that checkpoint
// (--restore latest takes an older one within the count) or refuses it
// (--restore DIR), before anything runs.
func TestRestoreCountBelowPosition(t *testing.T) {
	dir := t.TempDir()
	job := filepath.Join(dir, "job.yaml")
	os.WriteFile(job, []byte("source:\n  generator: {count: 25}\nsink:\n  discard: {}\ncheckpoint: {dir: ck, interval: 1s}\n"), 0o644)
	f, err := Load(job)
	if err != nil {
		t.Fatal(err)
	}
	store, _ := snapshot.Open(filepath.Join(dir, "ck"), 3, nil)
	for id := uint64(1); id <= 3; id++ {
		w, _ := store.Begin(id)
		if err := w.Commit(snapshot.Metadata{ID: id, Sources: map[string]int64{"source": int64(id) * 10}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.Build(Options{Restore: filepath.Join(dir, "ck", snapshot.Name(3))}); err == nil || !strings.Contains(err.Error(), "count 25 is below the checkpoint's position 30") {
		t.Fatalf("--restore chk-3 with count 25: %v", err)
	}
	var warnings []string
	j, err := f.Build(Options{Restore: "latest", Warn: func(m string) { warnings = append(warnings, m) }})
	if err != nil {
		t.Fatal(err)
	}
	j.Source.Close()
	j.Checkpoint.Store.Unlock()
	if j.Checkpoint.Restore.Meta.ID != 2 || len(warnings) != 1 || !strings.Contains(warnings[0], "below the checkpoint's position 30") {
		t.Fatalf("restored %d, warnings %q", j.Checkpoint.Restore.Meta.ID, warnings)
	}
}

// runtime.batch_linger: empty is the default (0: runtime's 1 ms), off
// turns adaptive batching off, a positive duration up to 1 s sets the
// linger; anything else is refused at the value's line and column.
func TestBatchLinger(t *testing.T) {
	for raw, want := range map[string]time.Duration{"": 0, "off": -1, "200us": 200 * time.Microsecond, "1s": time.Second} {
		f, err := Parse("job.yaml", []byte("source:\n  generator: {count: 10}\nsink:\n  csv: {path: "+filepath.Join(t.TempDir(), "o.csv")+"}\nruntime:\n  batch_linger: \""+raw+"\"\n"))
		if err != nil {
			t.Fatal(err)
		}
		job, err := f.Build(Options{Validate: true})
		if err != nil {
			t.Fatalf("batch_linger %q: %v", raw, err)
		}
		if job.BatchLinger != want {
			t.Errorf("batch_linger %q: %s, want %s", raw, job.BatchLinger, want)
		}
		job.Source.Close()
	}
	for _, raw := range []string{"0s", "-1ms", "2s", "soon"} {
		f, err := Parse("job.yaml", []byte("source:\n  generator: {count: 10}\nsink:\n  csv: {path: o.csv}\nruntime:\n  batch_linger: \""+raw+"\"\n"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Build(Options{Validate: true}); err == nil || !strings.Contains(err.Error(), "job.yaml:6:17") || !strings.Contains(err.Error(), "batch_linger") {
			t.Errorf("batch_linger %q: %v", raw, err)
		}
	}
}

// runtime.buffer_target: empty is the default (0: chosen from the
// checkpoint interval), off turns debloating off, a positive duration sets
// it; anything else is refused with the key's line.
func TestBufferTarget(t *testing.T) {
	for raw, want := range map[string]time.Duration{"": 0, "off": -1, "250ms": 250 * time.Millisecond, "1s": time.Second} {
		f, err := Parse("job.yaml", []byte("source:\n  generator: {count: 10}\nsink:\n  csv: {path: "+filepath.Join(t.TempDir(), "o.csv")+"}\nruntime:\n  buffer_target: \""+raw+"\"\n"))
		if err != nil {
			t.Fatal(err)
		}
		job, err := f.Build(Options{Validate: true})
		if err != nil {
			t.Fatalf("buffer_target %q: %v", raw, err)
		}
		if job.BufferTarget != want {
			t.Errorf("buffer_target %q: %s, want %s", raw, job.BufferTarget, want)
		}
		job.Source.Close()
	}
	for _, raw := range []string{"0s", "-1s", "fast"} {
		f, err := Parse("job.yaml", []byte("source:\n  generator: {count: 10}\nsink:\n  csv: {path: o.csv}\nruntime:\n  buffer_target: \""+raw+"\"\n"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Build(Options{Validate: true}); err == nil || !strings.Contains(err.Error(), "job.yaml:6:") || !strings.Contains(err.Error(), "buffer_target") {
			t.Errorf("buffer_target %q: %v", raw, err)
		}
	}
}
