package snapshot

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func write(t *testing.T, s *Store, id uint64, files map[string]string) {
	t.Helper()
	w, err := s.Begin(id)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if err := w.WriteFile(name, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(Metadata{Sources: map[string]int64{"flights": int64(id) * 100}, KeyGroups: 4096, Channels: 3}); err != nil {
		t.Fatal(err)
	}
}

func TestRoundTripAndRetention(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	for id := uint64(1); id <= 4; id++ {
		write(t, s, id, map[string]string{"window-kg-0000-1023": fmt.Sprintf("state %d", id), "lookup": "x"})
	}
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != 4 || list[1].ID != 3 {
		t.Fatalf("retained %+v, want checkpoints 4 and 3", list)
	}
	c, skipped, err := s.Latest()
	if err != nil || len(skipped) != 0 {
		t.Fatalf("latest: %v %v", err, skipped)
	}
	if c.Meta.ID != 4 || c.Meta.Sources["flights"] != 400 || c.Meta.Version != FormatVersion || len(c.Meta.Files) != 2 {
		t.Fatalf("metadata %+v", c.Meta)
	}
	data, err := c.ReadFile("window-kg-0000-1023")
	if err != nil || string(data) != "state 4" {
		t.Fatalf("read %q %v", data, err)
	}
	if _, err := s.Begin(3); err == nil {
		t.Fatal("Begin of an id before the newest accepted")
	}
}

func TestNoCheckpoint(t *testing.T) {
	s, _ := Open(t.TempDir(), 3, nil)
	if _, _, err := s.Latest(); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("err = %v", err)
	}
}

// A crash while writing leaves a temporary directory: ignored by List and
// removed by the next Open.
func TestStrayTemporaryIgnoredAndCleaned(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir, 3, nil)
	write(t, s, 1, map[string]string{"a": "1"})
	w, _ := s.Begin(2)
	w.WriteFile("a", []byte("2")) // the job dies here
	if list, _ := s.List(); len(list) != 1 {
		t.Fatalf("list sees %d checkpoints, want 1", len(list))
	}
	if _, err := Open(dir, 3, nil); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			t.Fatalf("stray %s survived Open", e.Name())
		}
	}
}

// Corruption of the newest checkpoint — metadata truncated at every byte
// offset, a flipped bit, a missing or truncated state file — is detected,
// and Latest falls back to the previous valid one.
func TestCorruptionFallsBack(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir, 5, nil)
	write(t, s, 1, map[string]string{"a": "one"})
	write(t, s, 2, map[string]string{"a": "two"})
	newest := filepath.Join(dir, Name(2))
	meta, _ := os.ReadFile(filepath.Join(newest, MetadataFile))
	check := func(what string) {
		t.Helper()
		c, skipped, err := s.Latest()
		if err != nil || c.Meta.ID != 1 || len(skipped) != 1 || !errors.Is(skipped[0], ErrCorrupt) {
			t.Fatalf("%s: latest %v, skipped %v, err %v", what, c, skipped, err)
		}
	}
	for n := 0; n < len(meta); n++ {
		os.WriteFile(filepath.Join(newest, MetadataFile), meta[:n], 0o644)
		check(fmt.Sprintf("metadata truncated to %d bytes", n))
	}
	for i := range meta {
		flipped := append([]byte(nil), meta...)
		flipped[i] ^= 0x04
		os.WriteFile(filepath.Join(newest, MetadataFile), flipped, 0o644)
		if c, _, err := s.Latest(); err == nil && c.Meta.ID == 2 {
			// A flip inside JSON whitespace or the indentation leaves the
			// content intact; anything else must be caught.
			if strings.TrimSpace(string(flipped)) == strings.TrimSpace(string(meta)) {
				continue
			}
			var ok bool
			for _, b := range []byte{' ', '\n', '\t'} {
				ok = ok || meta[i] == b
			}
			if !ok {
				t.Fatalf("bit flip at metadata byte %d (%q) not detected", i, meta[i])
			}
		}
	}
	os.WriteFile(filepath.Join(newest, MetadataFile), meta, 0o644)
	os.WriteFile(filepath.Join(newest, "a"), []byte("twp"), 0o644)
	check("state file bit flip")
	os.WriteFile(filepath.Join(newest, "a"), []byte("tw"), 0o644)
	check("state file truncated")
	os.Remove(filepath.Join(newest, "a"))
	check("state file missing")
	os.RemoveAll(filepath.Join(dir, Name(1)))
	if _, _, err := s.Latest(); err == nil || errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("only corrupt checkpoints: err = %v, want an error that is not 'no checkpoint'", err)
	}
}

// faultFS injects errors: the nth write fails with ENOSPC, or every fsync
// fails.
type faultFS struct {
	OS
	writes    int
	failWrite int // 1-based; 0 = never
	failSync  bool
}

type faultFile struct {
	File
	fs *faultFS
}

func (f *faultFS) Create(p string) (File, error) {
	file, err := f.OS.Create(p)
	if err != nil {
		return nil, err
	}
	return &faultFile{file, f}, nil
}

func (f *faultFile) Write(p []byte) (int, error) {
	f.fs.writes++
	if f.fs.writes == f.fs.failWrite {
		return 0, syscall.ENOSPC
	}
	return f.File.Write(p)
}

func (f *faultFile) Sync() error {
	if f.fs.failSync {
		return syscall.EIO
	}
	return f.File.Sync()
}

func (f *faultFS) SyncDir(p string) error {
	if f.failSync {
		return syscall.EIO
	}
	return f.OS.SyncDir(p)
}

// ENOSPC on any write, or an fsync error, fails that checkpoint with a
// clear error and leaves the last good one intact and used.
func TestDiskFaults(t *testing.T) {
	for n := 1; n <= 3; n++ {
		dir := t.TempDir()
		fsys := &faultFS{}
		s, _ := Open(dir, 2, fsys)
		write(t, s, 1, map[string]string{"a": "one", "b": "uno"})
		fsys.writes, fsys.failWrite = 0, n
		w, err := s.Begin(2)
		if err != nil {
			t.Fatal(err)
		}
		err = errors.Join(w.WriteFile("a", []byte("two")), w.WriteFile("b", []byte("dos")))
		if err == nil {
			err = w.Commit(Metadata{})
		} else {
			w.Abort()
		}
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("write %d fails: err = %v, want ENOSPC", n, err)
		}
		c, _, err := s.Latest()
		if err != nil || c.Meta.ID != 1 {
			t.Fatalf("after ENOSPC on write %d: latest %v %v", n, c, err)
		}
	}
	dir := t.TempDir()
	fsys := &faultFS{}
	s, _ := Open(dir, 2, fsys)
	write(t, s, 1, map[string]string{"a": "one"})
	fsys.failSync = true
	w, _ := s.Begin(2)
	if err := w.WriteFile("a", []byte("two")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("fsync error: %v", err)
	}
	w.Abort()
	fsys.failSync = false
	if c, _, err := s.Latest(); err != nil || c.Meta.ID != 1 {
		t.Fatalf("after fsync error: %v %v", c, err)
	}
	if list, _ := s.List(); len(list) != 1 {
		t.Fatalf("%d checkpoints after a failed one", len(list))
	}
}

func TestDiscardAfterAndClear(t *testing.T) {
	s, _ := Open(t.TempDir(), 5, nil)
	for id := uint64(1); id <= 4; id++ {
		write(t, s, id, map[string]string{"a": "x"})
	}
	if err := s.DiscardAfter(2); err != nil {
		t.Fatal(err)
	}
	list, _ := s.List()
	if len(list) != 2 || list[0].ID != 2 {
		t.Fatalf("after DiscardAfter(2): %+v", list)
	}
	write(t, s, 3, map[string]string{"a": "y"}) // epoch 3 can be written again
	if err := s.Clear(); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Count(); n != 0 {
		t.Fatalf("%d checkpoints after Clear", n)
	}
}

// A file written in parts reads back as their concatenation, and its size
// and checksum are the concatenation's (ReadFile verifies the checksum).
func TestWriteParts(t *testing.T) {
	s, err := Open(t.TempDir(), 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Begin(1)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 3*writeBuffer/2) // larger than the write buffer
	parts := [][]byte{[]byte("head"), nil, []byte(big), []byte("tail")}
	if err := w.WriteParts("op000-ch0000", parts); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(Metadata{}); err != nil {
		t.Fatal(err)
	}
	c, _, err := s.Latest()
	if err != nil {
		t.Fatal(err)
	}
	want := "head" + big + "tail"
	if f := c.Meta.Files[0]; f.Size != int64(len(want)) || f.CRC32C != Checksum([]byte(want)) {
		t.Fatalf("file info %+v, want size %d crc %08x", f, len(want), Checksum([]byte(want)))
	}
	data, err := c.ReadFile("op000-ch0000")
	if err != nil || string(data) != want {
		t.Fatalf("read %d bytes (%v), want %d", len(data), err, len(want))
	}
}

// OpenLocked lets one run at a time write a directory: a second OpenLocked
// gets ErrLocked (and removes nothing) until the first unlocks; plain Open
// and reading are not locked out.
func TestOpenLocked(t *testing.T) {
	dir := t.TempDir()
	a, err := OpenLocked(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(dir, tmpPrefix+"7") // a's checkpoint being written
	if err := os.Mkdir(stray, 0o755); err != nil {
		t.Fatal(err)
	}
	if !InUse(dir) {
		t.Fatal("InUse false while locked")
	}
	if _, err := OpenLocked(dir, 2); !errors.Is(err, ErrLocked) {
		t.Fatalf("second OpenLocked: %v, want ErrLocked", err)
	}
	if _, err := os.Stat(stray); err != nil {
		t.Fatalf("the locked-out run removed the other's temporary checkpoint: %v", err)
	}
	if _, err := a.List(); err != nil {
		t.Fatal(err)
	}
	a.Unlock()
	a.Unlock() // twice is fine
	if InUse(dir) || InUse(filepath.Join(dir, "nope")) {
		t.Fatal("InUse after Unlock, or of a missing directory")
	}
	b, err := OpenLocked(dir, 2)
	if err != nil {
		t.Fatalf("after Unlock: %v", err)
	}
	b.Unlock()
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Fatalf("the stray temporary checkpoint survived a locked Open: %v", err)
	}
}

// killFS deletes one file of a directory and then fails, as a process
// killed in the middle of deleting a checkpoint would leave it.
type killFS struct{ OS }

func (killFS) RemoveAll(p string) error {
	entries, _ := os.ReadDir(p)
	for _, e := range entries {
		if e.Name() != MetadataFile {
			os.Remove(filepath.Join(p, e.Name()))
			break
		}
	}
	return errors.New("killed")
}

// A checkpoint being deleted (Clear at a job's end, retention,
// DiscardAfter) is whole or gone whenever the process dies: it is renamed
// away before its files go, so a kill midway leaves no checkpoint whose
// metadata names missing files; the next Open removes what is left.
func TestRemoveIsAtomic(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir, 5, nil)
	for id := uint64(1); id <= 2; id++ {
		write(t, s, id, map[string]string{"a": "x", "b": "y"})
	}
	killed := &Store{dir: dir, fs: killFS{}, retain: 5}
	if err := killed.Clear(); err == nil {
		t.Fatal("Clear on a killed file system succeeded")
	}
	c, skipped, err := s.Latest()
	if err != nil || len(skipped) != 0 || c.Meta.ID != 1 {
		t.Fatalf("after a kill while clearing: checkpoint %v, skipped %v, %v", c, skipped, err)
	}
	if _, err := Open(dir, 5, nil); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			t.Fatalf("%s left after Open", e.Name())
		}
	}
}

// Metadata that names a state file outside the checkpoint's directory
// ("../x", an absolute path, ".", a name with a separator) — forged, with
// a valid checksum, and pointing at a file whose size and checksum match —
// is a corrupt checkpoint: nothing outside the directory is read, and
// Latest falls back to the older checkpoint.
func TestMetadataNamesConfined(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir, 5, nil)
	write(t, s, 1, map[string]string{"a": "one"})
	write(t, s, 2, map[string]string{"a": "two"})
	newest := filepath.Join(dir, Name(2))
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x"), []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(newest, outside)
	for _, name := range []string{"../x", rel, outside, ".", "..", "sub/../a", "", MetadataFile} {
		forge(t, newest, name)
		c, err := Load(newest, nil)
		if err == nil || !errors.Is(err, ErrCorrupt) {
			t.Errorf("metadata naming %q: Load gave %v, err %v; want a corrupt checkpoint", name, c, err)
		}
		if c, skipped, err := s.Latest(); err != nil || c.Meta.ID != 1 || len(skipped) != 1 || !errors.Is(skipped[0], ErrCorrupt) {
			t.Errorf("metadata naming %q: latest %v, skipped %v, err %v; want checkpoint 1", name, c, skipped, err)
		}
	}
	forge(t, newest, "a")
	if _, err := Load(newest, nil); err != nil {
		t.Fatalf("metadata rewritten with its own name: %v", err)
	}
}

// forge rewrites checkpoint dir's metadata so that its one state file is
// called name, with a valid metadata checksum.
func forge(t *testing.T, dir, name string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, MetadataFile))
	if err != nil {
		t.Fatal(err)
	}
	var env envelope
	var m Metadata
	if err := json.Unmarshal(data, &env); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(env.Meta, &m); err != nil {
		t.Fatal(err)
	}
	m.Files[0].Name = name
	env.Meta, _ = json.Marshal(m)
	env.CRC32C = Checksum(env.Meta)
	data, _ = json.Marshal(env)
	if err := os.WriteFile(filepath.Join(dir, MetadataFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
}
