package sink

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"streamd/core"
)

// listDir names what dir holds, sorted.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// writeParts writes batch p of rs to part p, concurrently, and closes.
func writeParts(t *testing.T, k core.Sink, rs [][]rec) error {
	t.Helper()
	if err := k.Open(schema); err != nil {
		t.Fatal(err)
	}
	ps := k.(core.PartSink)
	errs := make(chan error, len(rs))
	for p, r := range rs {
		go func() {
			b := batchOf(schema, r)
			defer b.Release()
			errs <- ps.Part(p).Write(b)
		}()
	}
	for range rs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	return k.Close()
}

// A sink of parts: each part is a CSV file with the header (JSON lines
// without), written by its own goroutine; nothing shows under the path
// until Close, which replaces an earlier directory of parts whole; Abort
// leaves the earlier one as it was and nothing beside it; a directory
// holding anything else is refused and left alone.
func TestParts(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	rs := records()
	k := CSVParts(out, 3, CSVOptions{Header: true})
	if err := writeParts(t, k, [][]rec{rs[:2], nil, rs[2:5]}); err != nil {
		t.Fatal(err)
	}
	if got := listDir(t, out); !slices.Equal(got, []string{"part-00000.csv", "part-00001.csv", "part-00002.csv"}) {
		t.Fatalf("parts %v", got)
	}
	if got := listDir(t, dir); !slices.Equal(got, []string{"out"}) {
		t.Fatalf("beside the parts: %v", got)
	}
	for p, n := range []int{2, 0, 3} {
		b, _ := os.ReadFile(filepath.Join(out, PartName(p, "csv")))
		if lines := strings.Count(string(b), "\n"); !strings.HasPrefix(string(b), "s,i,f,b,t\n") || lines < n+1 {
			t.Fatalf("part %d: %q", p, b)
		}
	}
	// An earlier run's parts are replaced, fewer or more of them.
	if err := writeParts(t, JSONLParts(out, 2), [][]rec{rs[:1], rs[1:2]}); err != nil {
		t.Fatal(err)
	}
	if got := listDir(t, out); !slices.Equal(got, []string{"part-00000.jsonl", "part-00001.jsonl"}) {
		t.Fatalf("after a second run: %v", got)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "part-00001.jsonl")); strings.Count(string(b), "\n") != 1 || b[0] != '{' {
		t.Fatalf("JSON lines part: %q", b)
	}
	// Abort: the earlier parts stay, nothing is left beside them.
	a := CSVParts(out, 2, CSVOptions{})
	if err := a.Open(schema); err != nil {
		t.Fatal(err)
	}
	b := batchOf(schema, rs)
	a.(core.PartSink).Part(1).Write(b)
	b.Release()
	a.Abort()
	if got := listDir(t, out); !slices.Equal(got, []string{"part-00000.jsonl", "part-00001.jsonl"}) {
		t.Fatalf("after an abort: %v", got)
	}
	if got := listDir(t, dir); !slices.Equal(got, []string{"out"}) {
		t.Fatalf("beside the parts after an abort: %v", got)
	}
	// Anything but part files: refused, untouched.
	os.WriteFile(filepath.Join(out, "notes.txt"), []byte("mine"), 0o644)
	if err := CSVParts(out, 2, CSVOptions{}).Open(schema); err == nil || !strings.Contains(err.Error(), "notes.txt") {
		t.Fatalf("open over a directory with other files: %v", err)
	}
	if err := CheckPartsDir(filepath.Join(out, "notes.txt")); err == nil {
		t.Fatal("a file accepted as a directory of parts")
	}
	if got := listDir(t, out); len(got) != 3 {
		t.Fatalf("after a refusal: %v", got)
	}
}

// TestPartsDirMode: the directory of parts is readable like the parts and
// the single-file sinks' files (0644), not left at the temporary
// directory's 0700.
func TestPartsDirMode(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	if err := writeParts(t, CSVParts(out, 2, CSVOptions{Header: true}), [][]rec{records()[:1], nil}); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if m := st.Mode().Perm(); m != 0o755 {
		t.Fatalf("directory of parts has mode %o, want 755", m)
	}
}
