package snapshot

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// FormatVersion is the version of the checkpoint format this package
// writes and reads.
const FormatVersion = 2

// MetadataFile is the name of the file written last in a checkpoint.
const MetadataFile = "_metadata"

const (
	prefix    = "chk-"
	tmpPrefix = ".tmp-chk-"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum is the CRC-32C of data.
func Checksum(data []byte) uint32 { return crc32.Checksum(data, castagnoli) }

// ErrNoCheckpoint is returned by Latest when the directory holds no
// checkpoint at all.
var ErrNoCheckpoint = errors.New("no checkpoint")

// ErrCorrupt wraps every verification failure: bad checksum, truncated or
// missing file, unreadable or unknown-version metadata.
var ErrCorrupt = errors.New("checkpoint corrupt")

// FileInfo describes one state file of a checkpoint.
type FileInfo struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	CRC32C uint32 `json:"crc32c"`
}

// Metadata describes a checkpoint; the runtime fills the job-level fields.
type Metadata struct {
	Version int       `json:"version"`
	ID      uint64    `json:"id"`
	Time    time.Time `json:"time"`
	// Sources maps each source to its replay position (a Parquet row, a
	// file byte offset, a generator sequence number).
	Sources map[string]int64 `json:"sources,omitempty"`
	// Operators lists the stateful operators whose state is in Files.
	Operators []string `json:"operators,omitempty"`
	// OperatorStates says, for each of Operators, what its state depends
	// on (core.OperatorDef.State; "" for a stateless one): a restore into
	// a job whose operators differ is refused.
	OperatorStates []string `json:"operator_states,omitempty"`
	KeyGroups      int      `json:"key_groups,omitempty"`
	Channels       int      `json:"channels,omitempty"`
	// Owners is the key-group table the checkpoint was taken under:
	// element g is the channel that owned key group g (an explicit
	// assignment after a rebalance; jump hashing otherwise). A restore
	// starts from it (resized when the job runs another channel count).
	// Empty in checkpoints of stateless regions and of streamd before
	// 2027-01 (a restore then starts from jump hashing).
	Owners []int `json:"owners,omitempty"`
	// Watermark is the event time (ns) the job had reached.
	Watermark int64             `json:"watermark,omitempty"`
	Extra     map[string]string `json:"extra,omitempty"`
	Files     []FileInfo        `json:"files"`
}

type envelope struct {
	CRC32C uint32          `json:"crc32c"`
	Meta   json.RawMessage `json:"meta"`
}

// Store is a checkpoint directory. It is safe for use by one writer at a
// time; readers may list and load concurrently with it.
type Store struct {
	dir    string
	fs     FS
	retain int
	lock   *os.File // held by OpenLocked until Unlock
}

// LockFile is the file in a checkpoint directory that a run holds an
// exclusive lock on (flock), so that a second run cannot use the
// directory at the same time.
const LockFile = ".lock"

// ErrLocked: another process (another run of the job) holds the checkpoint
// directory.
var ErrLocked = errors.New("checkpoint directory in use by another run")

// OpenLocked is Open for the one run that writes the directory: it first
// takes an exclusive, non-blocking lock on LockFile in dir (ErrLocked if
// another process holds it), so that no other run removes this one's
// temporary checkpoint as stray, or writes checkpoints and output parts
// beside it. Unlock releases the lock; so does the process's exit.
func OpenLocked(dir string, retain int) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("checkpoint directory %s: %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("checkpoint directory %s: %w", dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", dir, ErrLocked)
		}
		return nil, fmt.Errorf("checkpoint directory %s: lock: %w", dir, err)
	}
	s, err := Open(dir, retain, nil)
	if err != nil {
		f.Close()
		return nil, err
	}
	s.lock = f
	return s, nil
}

// InUse reports whether a run holds dir's lock now (OpenLocked), without
// creating anything: a directory or lock file that does not exist is not
// in use.
func InUse(dir string) bool {
	f, err := os.Open(filepath.Join(dir, LockFile))
	if err != nil {
		return false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		return errors.Is(err, unix.EWOULDBLOCK)
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false
}

// Unlock releases the lock OpenLocked took (the lock file stays). A Store
// from Open, or one already unlocked, is left as it is. The Store can still
// be read afterwards.
func (s *Store) Unlock() {
	if s != nil && s.lock != nil {
		s.lock.Close()
		s.lock = nil
	}
}

// Open opens (creating) a checkpoint directory that keeps the newest retain
// complete checkpoints (at least 1), and removes stray temporary
// directories left by a crash. fsys nil means the real file system.
func Open(dir string, retain int, fsys FS) (*Store, error) {
	if fsys == nil {
		fsys = OS{}
	}
	if retain < 1 {
		retain = 1
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("checkpoint directory %s: %w", dir, err)
	}
	s := &Store{dir: dir, fs: fsys, retain: retain}
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("checkpoint directory %s: %w", dir, err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			if err := fsys.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return nil, fmt.Errorf("remove stray %s: %w", e.Name(), err)
			}
		}
	}
	return s, nil
}

// View returns a Store over an existing directory for reading only (List,
// Latest): nothing is created or cleaned up.
func View(dir string, fsys FS) *Store {
	if fsys == nil {
		fsys = OS{}
	}
	return &Store{dir: dir, fs: fsys, retain: 1}
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// Name is the directory name of checkpoint id.
func Name(id uint64) string { return fmt.Sprintf("%s%012d", prefix, id) }

// Writer writes one checkpoint. Use WriteFile for each state file, then
// Commit; Abort discards it.
type Writer struct {
	s     *Store
	id    uint64
	tmp   string
	files []FileInfo
	done  bool
}

// Begin starts checkpoint id (ids increase; one not greater than a
// completed one is an error).
func (s *Store) Begin(id uint64) (*Writer, error) {
	ids, err := s.ids()
	if err != nil {
		return nil, err
	}
	if len(ids) > 0 && id <= ids[0] {
		return nil, fmt.Errorf("checkpoint %d: not after the newest, %d", id, ids[0])
	}
	tmp := filepath.Join(s.dir, tmpPrefix+strconv.FormatUint(id, 10))
	if err := s.fs.RemoveAll(tmp); err != nil {
		return nil, err
	}
	if err := s.fs.MkdirAll(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("checkpoint %d: %w", id, err)
	}
	return &Writer{s: s, id: id, tmp: tmp}, nil
}

// WriteFile writes one state file (name: a plain file name, not
// _metadata) and fsyncs it.
func (w *Writer) WriteFile(name string, data []byte) error {
	return w.WriteParts(name, [][]byte{data})
}

// WriteParts writes one state file made of parts, in order (the file is
// their concatenation: its size and checksum cover all of them), and
// fsyncs it. It saves joining large parts in memory first. The parts are
// only read.
func (w *Writer) WriteParts(name string, parts [][]byte) error {
	if w.done {
		return errors.New("checkpoint writer is closed")
	}
	if !stateFileName(name) {
		return fmt.Errorf("checkpoint file name %q not allowed", name)
	}
	if err := w.write(name, parts...); err != nil {
		return fmt.Errorf("checkpoint %d: %s: %w", w.id, name, err)
	}
	var size int64
	var crc uint32
	for _, p := range parts {
		size += int64(len(p))
		crc = crc32.Update(crc, castagnoli, p)
	}
	w.files = append(w.files, FileInfo{Name: name, Size: size, CRC32C: crc})
	return nil
}

// write creates the file, writes the parts through a buffer of
// writeBuffer bytes (parts are often small: one key group each) and
// fsyncs it.
func (w *Writer) write(name string, parts ...[]byte) error {
	f, err := w.s.fs.Create(filepath.Join(w.tmp, name))
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, writeBuffer)
	for _, p := range parts {
		if _, err = bw.Write(p); err != nil {
			break
		}
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeBuffer is the write buffer of state files, in bytes.
const writeBuffer = 1 << 20

// Commit writes the metadata (its Version, ID and Files are set here),
// makes the checkpoint durable and visible, then applies retention. On
// error the checkpoint is discarded and earlier ones are untouched.
func (w *Writer) Commit(meta Metadata) error {
	if w.done {
		return errors.New("checkpoint writer is closed")
	}
	meta.Version, meta.ID, meta.Files = FormatVersion, w.id, w.files
	if meta.Time.IsZero() {
		meta.Time = time.Now().UTC()
	}
	err := w.commit(meta)
	if err != nil {
		w.Abort()
		return fmt.Errorf("checkpoint %d: %w", w.id, err)
	}
	w.done = true
	return w.s.retire()
}

func (w *Writer) commit(meta Metadata) error {
	raw, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	env, err := json.Marshal(envelope{CRC32C: Checksum(raw), Meta: raw})
	if err != nil {
		return err
	}
	if err := w.write(MetadataFile, env); err != nil {
		return fmt.Errorf("%s: %w", MetadataFile, err)
	}
	if err := w.s.fs.SyncDir(w.tmp); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	final := filepath.Join(w.s.dir, Name(w.id))
	if err := w.s.fs.Rename(w.tmp, final); err != nil {
		return err
	}
	return w.s.fs.SyncDir(w.s.dir)
}

// Abort discards the checkpoint being written.
func (w *Writer) Abort() {
	if !w.done {
		w.done = true
		w.s.fs.RemoveAll(w.tmp)
	}
}

// Clear deletes every checkpoint in the store (a job that completed: its
// output is final, and its checkpoints could no longer be restored
// consistently).
func (s *Store) Clear() error {
	ids, err := s.ids()
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := s.remove(id); err != nil {
			return fmt.Errorf("remove %s: %w", Name(id), err)
		}
	}
	return nil
}

// DiscardAfter deletes the checkpoints newer than id (on restore from id:
// newer ones failed verification or belong to the history being replaced,
// and new checkpoints must come after id).
func (s *Store) DiscardAfter(id uint64) error {
	ids, err := s.ids()
	if err != nil {
		return err
	}
	for _, n := range ids {
		if n > id {
			if err := s.remove(n); err != nil {
				return fmt.Errorf("remove %s: %w", Name(n), err)
			}
		}
	}
	return nil
}

// Count is the number of complete checkpoint directories (verified or not).
func (s *Store) Count() (int, error) {
	ids, err := s.ids()
	return len(ids), err
}

// retire deletes complete checkpoints beyond the newest retain.
func (s *Store) retire() error {
	ids, err := s.ids()
	if err != nil {
		return err
	}
	for _, id := range ids[min(len(ids), s.retain):] {
		if err := s.remove(id); err != nil {
			return fmt.Errorf("retention: remove %s: %w", Name(id), err)
		}
	}
	return nil
}

// remove deletes checkpoint id so that a crash at any moment leaves it
// whole or gone: it is first renamed to a temporary name (which List and
// Latest ignore and Open removes), then its files are deleted. Deleting
// in place could leave, after a kill, a checkpoint whose metadata names
// files already deleted: invalid, and if it was the only one, a run that
// cannot be resumed.
func (s *Store) remove(id uint64) error {
	dir := filepath.Join(s.dir, Name(id))
	gone := filepath.Join(s.dir, tmpPrefix+strconv.FormatUint(id, 10)+"-removed")
	if err := s.fs.Rename(dir, gone); err != nil {
		return err
	}
	return s.fs.RemoveAll(gone)
}

// ids lists complete checkpoint ids, newest first.
func (s *Store) ids() ([]uint64, error) {
	entries, err := s.fs.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("checkpoint directory %s: %w", s.dir, err)
	}
	var ids []uint64
	for _, e := range entries {
		n := e.Name()
		if !e.IsDir() || !strings.HasPrefix(n, prefix) {
			continue
		}
		if id, err := strconv.ParseUint(strings.TrimPrefix(n, prefix), 10, 64); err == nil {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] > ids[j] })
	return ids, nil
}

// stateFileName says whether name may name a state file: a plain name in
// the checkpoint's directory — not empty, not "." or "..", no path
// separator, not MetadataFile. Writers are held to it, and Load refuses
// metadata that names anything else: a forged or damaged name such as
// "../x" or "/etc/x" would otherwise be read outside the checkpoint.
func stateFileName(name string) bool {
	return name != "" && name != "." && name != ".." && name != MetadataFile &&
		!strings.ContainsAny(name, `/\`+"\x00") && filepath.IsLocal(name)
}

// Checkpoint is a verified, complete checkpoint.
type Checkpoint struct {
	Dir  string
	Meta Metadata
	fs   FS
}

// Load reads and verifies the checkpoint in dir: metadata checksum and
// version, and every state file's size and checksum.
func Load(dir string, fsys FS) (*Checkpoint, error) {
	if fsys == nil {
		fsys = OS{}
	}
	data, err := fsys.ReadFile(filepath.Join(dir, MetadataFile))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, dir, err)
	}
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("%w: %s: metadata: %v", ErrCorrupt, dir, err)
	}
	if Checksum(env.Meta) != env.CRC32C {
		return nil, fmt.Errorf("%w: %s: metadata checksum mismatch", ErrCorrupt, dir)
	}
	c := &Checkpoint{Dir: dir, fs: fsys}
	if err := json.Unmarshal(env.Meta, &c.Meta); err != nil {
		return nil, fmt.Errorf("%w: %s: metadata: %v", ErrCorrupt, dir, err)
	}
	if c.Meta.Version != FormatVersion {
		return nil, fmt.Errorf("%w: %s: format version %d, this streamd reads %d", ErrCorrupt, dir, c.Meta.Version, FormatVersion)
	}
	for _, f := range c.Meta.Files {
		if !stateFileName(f.Name) {
			return nil, fmt.Errorf("%w: %s: metadata names state file %q, not a plain name in the checkpoint's directory", ErrCorrupt, dir, f.Name)
		}
	}
	for _, f := range c.Meta.Files {
		if _, err := c.ReadFile(f.Name); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// ReadFile returns a state file's contents after checking its size and
// checksum against the metadata.
func (c *Checkpoint) ReadFile(name string) ([]byte, error) {
	for _, f := range c.Meta.Files {
		if f.Name != name {
			continue
		}
		if !stateFileName(name) {
			return nil, fmt.Errorf("%w: %s: state file %q is not a plain name in the checkpoint's directory", ErrCorrupt, c.Dir, name)
		}
		data, err := c.fs.ReadFile(filepath.Join(c.Dir, name))
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, c.Dir, err)
		}
		if int64(len(data)) != f.Size {
			return nil, fmt.Errorf("%w: %s: %s is %d bytes, metadata says %d", ErrCorrupt, c.Dir, name, len(data), f.Size)
		}
		if Checksum(data) != f.CRC32C {
			return nil, fmt.Errorf("%w: %s: %s checksum mismatch", ErrCorrupt, c.Dir, name)
		}
		return data, nil
	}
	return nil, fmt.Errorf("%s: no state file %q in this checkpoint", c.Dir, name)
}

// Info is one entry of List.
type Info struct {
	ID  uint64
	Dir string
	// Meta is set when the checkpoint verified; Err says why it did not.
	Meta *Metadata
	Err  error
}

// List returns every complete checkpoint, newest first, each verified.
func (s *Store) List() ([]Info, error) {
	ids, err := s.ids()
	if err != nil {
		return nil, err
	}
	out := make([]Info, len(ids))
	for i, id := range ids {
		dir := filepath.Join(s.dir, Name(id))
		out[i] = Info{ID: id, Dir: dir}
		if c, err := Load(dir, s.fs); err != nil {
			out[i].Err = err
		} else {
			out[i].Meta = &c.Meta
		}
	}
	return out, nil
}

// Latest returns the newest checkpoint that verifies, and the errors of
// newer ones it skipped. With no checkpoint it returns ErrNoCheckpoint;
// with checkpoints and none valid, an error joining theirs.
func (s *Store) Latest() (*Checkpoint, []error, error) { return s.LatestWhere(nil) }

// LatestWhere is Latest for the newest checkpoint that verifies and that
// accept (if not nil) takes: a checkpoint accept refuses is skipped with
// accept's error, like one that fails verification.
func (s *Store) LatestWhere(accept func(*Checkpoint) error) (*Checkpoint, []error, error) {
	ids, err := s.ids()
	if err != nil {
		return nil, nil, err
	}
	if len(ids) == 0 {
		return nil, nil, fmt.Errorf("%s: %w", s.dir, ErrNoCheckpoint)
	}
	var skipped []error
	for _, id := range ids {
		c, err := Load(filepath.Join(s.dir, Name(id)), s.fs)
		if err == nil && accept != nil {
			err = accept(c)
		}
		if err == nil {
			return c, skipped, nil
		}
		skipped = append(skipped, err)
	}
	return nil, skipped, fmt.Errorf("%s: no valid checkpoint among %d: %w", s.dir, len(ids), errors.Join(skipped...))
}
