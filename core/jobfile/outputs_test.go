package jobfile

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"streamd/snapshot"
)

// buildText writes job text into dir/job.yaml, loads and builds it, and
// closes the source.
func buildText(t *testing.T, dir, text string, opt Options) error {
	t.Helper()
	job := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(job, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(job)
	if err != nil {
		return err
	}
	j, err := f.Build(opt)
	if err != nil {
		return err
	}
	j.Source.Close()
	return nil
}

// A file sink path that exists and is not a regular file, or lies under a
// file, is a configuration error at the path's position when the job is
// built; a path that does not exist yet, or a regular file, is not. The
// dead-letter file, appended to rather than replaced, may be a device or a
// FIFO but not a directory or a socket.
func TestOutputPaths(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, make func(p string) error) string {
		p := filepath.Join(dir, name)
		if err := make(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	file := mk("file.csv", func(p string) error { return os.WriteFile(p, nil, 0o644) })
	subdir := mk("subdir", func(p string) error { return os.Mkdir(p, 0o755) })
	fifo := mk("fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) })
	sock := mk("sock", func(p string) error {
		l, err := net.Listen("unix", p)
		if err == nil {
			l.(*net.UnixListener).SetUnlinkOnClose(false)
			l.Close()
		}
		return err
	})
	linkFile := mk("link-file", func(p string) error { return os.Symlink(file, p) })
	linkDir := mk("link-dir", func(p string) error { return os.Symlink(subdir, p) })
	dangling := mk("dangling", func(p string) error { return os.Symlink(filepath.Join(dir, "nowhere"), p) })

	for _, c := range []struct {
		path string
		sink string // "" if allowed, else the start of the message after the path
		dead string
	}{
		{filepath.Join(dir, "new", "deeper", "out.csv"), "", ""},
		{file, "", ""},
		{subdir, "is a directory", "is a directory"},
		{"/dev/null", "is a device", ""},
		{fifo, "is a FIFO", ""},
		{sock, "is a socket", "is a socket"},
		{linkFile, "is a symbolic link", ""},
		{linkDir, "is a symbolic link", "is a directory"},
		{dangling, "is a symbolic link", ""},
		{filepath.Join(file, "out.csv"), "is not a directory", "is not a directory"},
		{filepath.Join(file, "a", "out.csv"), "is not a directory", "is not a directory"},
	} {
		for _, k := range []struct{ kind, key, text, want string }{
			{"csv sink", "sink.csv.path", "source: {generator: {count: 1}}\nsink:\n  csv: {path: " + c.path + "}\n", c.sink},
			{"jsonl sink", "sink.jsonl.path", "source: {generator: {count: 1}}\nsink:\n  jsonl: {path: " + c.path + "}\n", c.sink},
			{"dead letters", "dead_letter_path", "on_error: dead_letter\ndead_letter_path: " + c.path + "\nsource: {generator: {count: 1}}\nsink: {discard: {}}\n", c.dead},
		} {
			err := buildText(t, dir, k.text, Options{})
			rel := strings.TrimPrefix(c.path, dir+"/")
			if k.want == "" {
				if err != nil {
					t.Errorf("%s %s: %v", k.kind, rel, err)
				}
				continue
			}
			var e *Error
			if !errors.As(err, &e) || e.Path != k.key || e.Line == 0 || !strings.Contains(e.Msg, k.want) {
				t.Errorf("%s %s: got %v; want an error at %s saying %q", k.kind, rel, err, k.key, k.want)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); err == nil {
		t.Error("building the job created the sink's directory")
	}
}

// --channels (Options.Channels) errors name the flag, not a line of the
// file: a job without a region, a value out of range, more channels than
// key groups.
func TestChannelsOption(t *testing.T) {
	dir := t.TempDir()
	noRegion := "source: {generator: {count: 10}}\nsink: {discard: {}}\n"
	keyed := "source: {generator: {count: 10}}\nregion:\n  channels: 2\n  key_by: [key]\n  key_groups: 16\n  ops: [{filter: value > 0}]\nsink: {discard: {}}\n"
	for _, c := range []struct {
		text     string
		channels int
		want     string
	}{
		{noRegion, 4, "--channels 4: " + filepath.Join(dir, "job.yaml") + " has no parallel region"},
		{keyed, 5000, "--channels must be between 1 and 1024, not 5000"},
		{keyed, -1, "--channels must be between 1 and 1024, not -1"},
		{keyed, 32, "--channels 32: more channels than the region's 16 key groups"},
		{keyed, 16, ""},
		{noRegion, 0, ""},
	} {
		err := buildText(t, dir, c.text, Options{Channels: c.channels})
		var e *Error
		switch {
		case c.want == "" && err != nil:
			t.Errorf("channels %d: %v", c.channels, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want) || errors.As(err, &e)):
			t.Errorf("channels %d: got %v; want an error (not at a position in the file) starting %q", c.channels, err, c.want)
		}
	}
}

// Validate changes nothing on disk: checkpoint.dir is not created, and
// checkpoints of an unfinished run in it are mentioned, not refused.
func TestValidateCheckpointDir(t *testing.T) {
	dir := t.TempDir()
	text := "source: {generator: {count: 10}}\nsink: {csv: {path: out/out.csv}}\ncheckpoint: {dir: ck}\n"
	var notes []string
	opt := Options{Validate: true, Warn: func(m string) { notes = append(notes, m) }}
	if err := buildText(t, dir, text, opt); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "ck")
	if _, err := os.Stat(ck); err == nil {
		t.Fatal("validate created checkpoint.dir")
	}
	store, err := snapshot.Open(ck, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := store.Begin(1)
	if err := w.Commit(snapshot.Metadata{Sources: map[string]int64{"source": 5}}); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(ck, ".tmp-chk-2") // a crashed run's partial checkpoint
	os.Mkdir(stray, 0o755)
	if err := buildText(t, dir, text, opt); err != nil {
		t.Fatalf("validate with checkpoints of an unfinished run: %v", err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "1 checkpoint(s) of an unfinished run") {
		t.Errorf("notes %q", notes)
	}
	if _, err := os.Stat(stray); err != nil {
		t.Errorf("validate cleaned up checkpoint.dir: %v", err)
	}
	// A checkpoint.dir that is a file is an error at its line.
	os.WriteFile(filepath.Join(dir, "ckfile"), nil, 0o644)
	err = buildText(t, dir, strings.Replace(text, "dir: ck", "dir: ckfile", 1), opt)
	var e *Error
	if !errors.As(err, &e) || e.Path != "checkpoint.dir" || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("checkpoint.dir a file: %v", err)
	}
}

// --restore latest with no checkpoint is snapshot.ErrNoCheckpoint, saying
// how to start afresh.
func TestRestoreWithoutCheckpoint(t *testing.T) {
	dir := t.TempDir()
	err := buildText(t, dir, "source: {generator: {count: 10}}\nsink: {discard: {}}\ncheckpoint: {dir: ck}\n", Options{Restore: "latest"})
	if !errors.Is(err, snapshot.ErrNoCheckpoint) || !strings.Contains(err.Error(), "run without --restore to start afresh") {
		t.Errorf("got %v", err)
	}
}

// A sink that would replace a file the job reads — its input, a lookup
// table — or its dead-letter file is refused at the sink's path, also
// through a symbolic or hard link, and a directory of parts holding the
// input is refused too; a sink beside them is not.
func TestSinkIsNotInput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "data", "in.csv")
	copyFile(t, "testdata/in.csv", in)
	copyFile(t, "testdata/airports.csv", filepath.Join(dir, "airports.csv"))
	if err := os.Symlink(in, filepath.Join(dir, "sym.csv")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(in, filepath.Join(dir, "hard.csv")); err != nil {
		t.Fatal(err)
	}
	job := func(sink string) string {
		return `dead_letter_path: dead.jsonl
source:
  csv:
    path: data/in.csv
    columns: {ts: timestamp, origin: string, delay: int64}
post:
  - lookup_csv: {path: airports.csv, key: origin, table_key: iata}
sink:
  ` + sink + "\n"
	}
	for _, c := range []struct{ sink, want string }{
		{"csv: {path: data/in.csv}", "job.yaml:9:15: sink.csv.path: " + in + " is the input file (source.csv.path, line 4): the sink would overwrite it"},
		{"csv: {path: sym.csv}", "job.yaml:9:15: sink.csv.path: " + filepath.Join(dir, "sym.csv") + " is the input file"},
		{"jsonl: {path: hard.csv}", "job.yaml:9:17: sink.jsonl.path: " + filepath.Join(dir, "hard.csv") + " is the input file"},
		{"csv: {path: " + filepath.Join(dir, "airports.csv") + "}", "is a lookup_csv table (post[0].lookup_csv.path, line 7)"},
		{"jsonl: {path: dead.jsonl}", "is the dead-letter file (dead_letter_path, line 1)"},
		{"csv: {path: data, parts: 2}", "job.yaml:9:15: sink.csv.path: " + filepath.Join(dir, "data")},
		{"csv: {path: data/out.csv}", ""},
	} {
		err := buildText(t, dir, job(c.sink), Options{})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.sink, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one with %q", c.sink, err, c.want)
		}
	}
	// A lookup table that looks like a part file, in the parts directory.
	copyFile(t, "testdata/airports.csv", filepath.Join(dir, "p", "part-00000.csv"))
	err := buildText(t, dir, `source:
  csv:
    path: data/in.csv
    columns: {ts: timestamp, origin: string, delay: int64}
post:
  - lookup_csv: {path: p/part-00000.csv, key: origin, table_key: iata}
sink:
  csv: {path: p, parts: 1}
`, Options{})
	if want := "job.yaml:8:15: sink.csv.path: " + filepath.Join(dir, "p") + " holds a lookup_csv table"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("parts directory holding a lookup table: error %v, want one with %q", err, want)
	}
}

// A sink, dead-letter file or checkpoint directory that cannot be created
// is refused when the job is built (by validate too), at its key, and
// building creates nothing: a path under a regular file always; a path in
// a directory the job may not write (not as root, whom permission bits do
// not stop).
func TestOutputDirWritable(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, "testdata/in.csv", filepath.Join(dir, "in.csv"))
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ro, "old.csv"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ro, "dead.jsonl"), nil, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(ro, 0o755) })
	job := func(top, sink string) string {
		return top + `source:
  csv:
    path: in.csv
    columns: {ts: timestamp, origin: string, delay: int64}
sink:
  csv: {path: ` + sink + "}\n"
	}
	before := tree(t, dir)
	cases := []struct {
		top, sink, want string
		perm            bool // needs permission bits to hold (not root)
	}{
		{"", "in.csv/out.csv", "job.yaml:6:15: sink.csv.path: " + filepath.Join(dir, "in.csv") + " is not a directory", false},
		{"", "in.csv/a/b/out.csv", "job.yaml:6:15: sink.csv.path: " + filepath.Join(dir, "in.csv") + " is not a directory", false},
		{"on_error: dead_letter\ndead_letter_path: in.csv/dead.jsonl\n", "out.csv", "job.yaml:2:19: dead_letter_path: " + filepath.Join(dir, "in.csv") + " is not a directory", false},
		{"checkpoint: {dir: in.csv/chk}\n", "out.csv", "checkpoint.dir", false},
		{"", "ro/out.csv", "job.yaml:6:15: sink.csv.path: " + filepath.Join(ro, "out.csv") + " cannot be created: directory " + ro + " is not writable (permission denied)", true},
		{"", "ro/sub/out.csv", "job.yaml:6:15: sink.csv.path: " + filepath.Join(ro, "sub", "out.csv") + " cannot be created: directory " + ro + " is not writable", true},
		{"", "ro/old.csv", "job.yaml:6:15: sink.csv.path: " + filepath.Join(ro, "old.csv") + " cannot be created: directory " + ro, true},
		{"on_error: dead_letter\ndead_letter_path: ro/new.jsonl\n", "out.csv", "job.yaml:2:19: dead_letter_path: " + filepath.Join(ro, "new.jsonl") + " cannot be created", true},
		{"on_error: dead_letter\ndead_letter_path: ro/dead.jsonl\n", "out.csv", "job.yaml:2:19: dead_letter_path: " + filepath.Join(ro, "dead.jsonl") + " cannot be appended to (permission denied)", true},
		{"checkpoint: {dir: ro/chk}\n", "out.csv", "job.yaml:1:19: checkpoint.dir: ", true},
	}
	for _, c := range cases {
		if c.perm && os.Geteuid() == 0 {
			continue
		}
		for _, validate := range []bool{true, false} {
			err := buildText(t, dir, job(c.top, c.sink), Options{Validate: validate})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s%s (validate %v): error %v, want one with %q", c.top, c.sink, validate, err, c.want)
			}
			var je *Error
			if !errors.As(err, &je) || je.Line == 0 {
				t.Errorf("%s%s: error %v names no line", c.top, c.sink, err)
			}
		}
	}
	if os.Geteuid() != 0 {
		err := buildText(t, dir, "source:\n  csv:\n    path: in.csv\n    columns: {ts: timestamp}\nsink:\n  csv: {path: ro/parts, parts: 2}\n", Options{Validate: true})
		if want := "job.yaml:6:15: sink.csv.path: " + filepath.Join(ro, "parts") + " cannot be created"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parts in a read-only directory: error %v, want one with %q", err, want)
		}
	}
	if err := buildText(t, dir, job("", "new/dir/out.csv"), Options{Validate: true}); err != nil {
		t.Errorf("a sink whose directories will be created: %v", err)
	}
	os.Remove(filepath.Join(dir, "job.yaml"))
	if after := tree(t, dir); !slices.Equal(after, before) {
		t.Errorf("building created or removed files: %q, was %q", after, before)
	}
}

// tree lists the paths under dir.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		out = append(out, p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Outputs names each file sink's path (resolved against the job file's
// folder) and the dead-letter file; every sink kind with a path says what
// it writes (sinkEntry.output).
func TestOutputs(t *testing.T) {
	for _, k := range sinkKinds.all() {
		if _, ok := k.spec.Elem().FieldByName("Path"); ok && k.output == nil {
			t.Errorf("sink kind %s has a path but no output: the run's report would not name its file", k.name)
		}
	}
	for _, c := range []struct {
		sink string
		want []Output
	}{
		{"csv: {path: out/a.csv}", []Output{{What: "output", Path: "/jobs/out/a.csv"}}},
		{"jsonl: {path: /abs/a.jsonl, parts: 3}", []Output{{What: "output", Path: "/abs/a.jsonl", Parts: 3}}},
		{"parquet: {path: a.parquet}", []Output{{What: "output", Path: "/jobs/a.parquet"}}},
		{"kafka: {brokers: [\"h1:9092\", \"h2:9092\"], topic: t}", []Output{{What: "output", Where: "kafka topic t at h1:9092,h2:9092"}}},
		{"stdout: {}", nil},
		{"discard: {}", nil},
	} {
		f, err := Parse("/jobs/job.yaml", []byte("source: {generator: {count: 1}}\nsink: {"+c.sink+"}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Outputs(); !slices.Equal(got, c.want) {
			t.Errorf("sink %s: outputs %v, want %v", c.sink, got, c.want)
		}
	}
	f, err := Parse("/jobs/job.yaml", []byte("source: {generator: {count: 1}}\non_error: dead_letter\ndead_letter_path: bad.jsonl\nsink: {csv: {path: a.csv}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Output{{What: "output", Path: "/jobs/a.csv"}, {What: "dead letters", Path: "/jobs/bad.jsonl"}}
	if got := f.Outputs(); !slices.Equal(got, want) {
		t.Errorf("outputs %v, want %v", got, want)
	}
}
