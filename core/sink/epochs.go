package sink

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"streamd/core"
)

// Exactly-once output for checkpointed jobs (core.EpochSink). A file sink
// writes each checkpoint epoch's records to its own part file,
// <path>.parts/epoch-<n>, fsynced at the epoch's barrier. A restore from
// checkpoint r keeps the parts of epochs ≤ r (their records were emitted
// before barrier r, and the restored job does not emit them again) and
// deletes the rest; Close concatenates the parts, in epoch order, into the
// final file (temporary name, fsync, rename) and removes the parts. After
// any number of crashes and restores the final file equals an uncrashed
// run's. A job that fails and is not restored leaves the parts directory;
// the next fresh run removes it.
//
// Each part's size and CRC-32C are computed as it is written; the sink's
// manifest (one line per durable part: epoch, bytes, checksum) goes into
// every checkpoint (core.OutputManifest), and a restore first checks the
// parts it keeps against the manifest of the checkpoint it restores from:
// a part deleted, truncated, extended or changed after its checkpoint is
// reported (core.ErrOutputDamaged) instead of giving short output.

// epochState is a file sink's epoch bookkeeping.
type epochState struct {
	dir   string   // <path>.parts
	epoch uint64   // the epoch being written
	part  *os.File // its part file, opened on first write
	size  int64    // bytes written to part
	crc   uint32   // their CRC-32C
	// manifest describes every durable part (manifestLine each).
	manifest []byte
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// manifestLine describes one part: epoch, size in bytes, CRC-32C.
func manifestLine(dst []byte, epoch uint64, size int64, crc uint32) []byte {
	return fmt.Appendf(dst, "%d %d %08x\n", epoch, size, crc)
}

// partInfo is one manifest line, parsed.
type partInfo struct {
	epoch uint64
	size  int64
	crc   uint32
}

func parseManifest(m []byte) ([]partInfo, error) {
	var out []partInfo
	for i, line := range strings.Split(strings.TrimSuffix(string(m), "\n"), "\n") {
		if line == "" {
			continue
		}
		var p partInfo
		if n, err := fmt.Sscanf(line, "%d %d %x", &p.epoch, &p.size, &p.crc); n != 3 || err != nil {
			return nil, fmt.Errorf("output manifest line %d: %q", i+1, line)
		}
		out = append(out, p)
	}
	return out, nil
}

func partName(e uint64) string { return fmt.Sprintf("epoch-%012d", e) }

// OpenEpochs implements core.EpochSink (file sinks; a Stdout sink opens as
// usual and cannot take back what it wrote).
func (s *textSink) OpenEpochs(schema *core.Schema, restored uint64) error {
	if s.path == "" {
		return s.Open(schema)
	}
	if s.state != created {
		return s.fail(errors.New("opened twice"))
	}
	s.buf = make([]byte, 0, bufSize+bufSize/4)
	s.format, s.schema = s.newFormat(), schema
	var err error
	if s.buf, err = s.format.open(s.buf, schema); err != nil {
		return s.fail(err)
	}
	if st, err := os.Lstat(s.path); err == nil && !st.IsDir() && !st.Mode().IsRegular() {
		return s.fail(fmt.Errorf("%s exists and is not a regular file", s.path))
	}
	ep := &epochState{dir: s.path + ".parts", epoch: restored + 1}
	if restored > 0 {
		if ep.manifest, err = s.checked.restoredManifest(ep.dir, restored); err != nil {
			return s.fail(fmt.Errorf("restore from checkpoint %d: output parts: %w", restored, err))
		}
		s.buf = s.buf[:0] // the header is in epoch 1's part
	}
	if err := keepParts(ep.dir, restored); err != nil {
		return s.fail(err)
	}
	s.epochs = ep
	s.out = writerFunc(s.writePart)
	s.state = opened
	return nil
}

func parseEpoch(name string) (uint64, bool) {
	n, err := strconv.ParseUint(strings.TrimPrefix(name, "epoch-"), 10, 64)
	return n, err == nil && strings.HasPrefix(name, "epoch-")
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func (s *textSink) writePart(p []byte) (int, error) {
	ep := s.epochs
	if ep.part == nil {
		f, err := os.Create(filepath.Join(ep.dir, partName(ep.epoch)))
		if err != nil {
			return 0, err
		}
		ep.part = f
		ep.size, ep.crc = 0, 0
	}
	n, err := ep.part.Write(p)
	ep.size += int64(n)
	ep.crc = crc32.Update(ep.crc, castagnoli, p[:n])
	return n, err
}

// closePart flushes and fsyncs the current part.
func (s *textSink) closePart() error {
	if err := s.flush(); err != nil {
		return err
	}
	ep := s.epochs
	if ep.part == nil {
		return nil
	}
	ep.manifest = manifestLine(ep.manifest, ep.epoch, ep.size, ep.crc)
	err := ep.part.Sync()
	if cerr := ep.part.Close(); err == nil {
		err = cerr
	}
	ep.part = nil
	if err != nil {
		return s.fail(err)
	}
	return nil
}

// Barrier implements core.EpochSink: the epoch's part is complete and
// durable.
func (s *textSink) Barrier(epoch uint64) error {
	if s.epochs == nil {
		return s.flush()
	}
	if err := s.closePart(); err != nil {
		return err
	}
	s.epochs.epoch = epoch + 1
	return syncDir(s.epochs.dir)
}

// Manifest implements core.OutputManifest: one line per part made durable
// by a Barrier so far (epoch, bytes, CRC-32C). The returned slice is not
// changed afterwards.
func (s *textSink) Manifest() []byte {
	if s.epochs == nil {
		return nil
	}
	m := s.epochs.manifest
	return m[:len(m):len(m)]
}

// VerifyOutput implements core.OutputManifest: the parts of epochs ≤
// restored in <path>.parts must be exactly those manifest lists, each
// with its size and CRC-32C. It reads them and changes nothing.
func (s *textSink) VerifyOutput(manifest []byte, restored uint64) error {
	if s.path == "" {
		return nil
	}
	return s.checked.verify(s.path+".parts", manifest, restored)
}

// verifiedParts remembers the last manifest VerifyOutput found intact, so
// that a restore checks its parts once (choosing the checkpoint, then
// starting), and OpenEpochs starts from the manifest of the parts kept.
type verifiedParts struct {
	kept, src []byte // the manifest of the parts kept, and the one checked
	restored  uint64
}

// verify checks that the parts of epochs ≤ restored in dir are exactly
// those manifest lists, each with its size and CRC-32C; errors wrap
// core.ErrOutputDamaged and name the part.
func (v *verifiedParts) verify(dir string, manifest []byte, restored uint64) error {
	if v.src != nil && v.restored == restored && bytes.Equal(manifest, v.src) {
		return nil
	}
	want, err := parseManifest(manifest)
	if err != nil {
		return fmt.Errorf("%w: %v", core.ErrOutputDamaged, err)
	}
	listed := map[uint64]bool{}
	for _, p := range want {
		if p.epoch > restored {
			continue
		}
		listed[p.epoch] = true
		name := filepath.Join(dir, partName(p.epoch))
		size, crc, err := checksumFile(name)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return fmt.Errorf("%w: %s is missing (%d bytes committed)", core.ErrOutputDamaged, name, p.size)
		case err != nil:
			return fmt.Errorf("%w: %s: %v", core.ErrOutputDamaged, name, err)
		case size != p.size:
			return fmt.Errorf("%w: %s holds %d bytes, %d were committed", core.ErrOutputDamaged, name, size, p.size)
		case crc != p.crc:
			return fmt.Errorf("%w: %s has checksum %08x, %08x was committed", core.ErrOutputDamaged, name, crc, p.crc)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", core.ErrOutputDamaged, dir, err)
	}
	for _, e := range entries {
		if n, ok := parseEpoch(e.Name()); ok && n <= restored && !listed[n] {
			return fmt.Errorf("%w: %s was not committed by checkpoint %d", core.ErrOutputDamaged, filepath.Join(dir, e.Name()), restored)
		}
	}
	v.kept, v.src, v.restored = keptManifest(want, restored), manifest, restored
	return nil
}

// restoredManifest returns the manifest of the parts of epochs ≤ restored
// in dir: the one verify found, or else read from the files (a restore
// from a checkpoint that recorded none).
func (v *verifiedParts) restoredManifest(dir string, restored uint64) ([]byte, error) {
	if v.kept != nil && v.restored == restored {
		return v.kept, nil
	}
	return describeParts(dir, restored)
}

// keepParts prepares dir for writing epoch restored+1: a fresh start
// (restored 0) removes it; a restore removes the parts of epochs after
// restored (and anything else there). It creates dir.
func keepParts(dir string, restored uint64) error {
	if restored == 0 {
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	} else {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("restore from checkpoint %d: output parts: %w", restored, err)
		}
		for _, e := range entries {
			if n, ok := parseEpoch(e.Name()); !ok || n > restored {
				if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
					return err
				}
			}
		}
	}
	return os.MkdirAll(dir, 0o755)
}

// partEpochs lists the epochs of the parts in dir, in order.
func partEpochs(dir string) ([]uint64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var epochs []uint64
	for _, e := range entries {
		if n, ok := parseEpoch(e.Name()); ok {
			epochs = append(epochs, n)
		}
	}
	sort.Slice(epochs, func(i, j int) bool { return epochs[i] < epochs[j] })
	return epochs, nil
}

// keptManifest is the manifest of the parts a restore keeps.
func keptManifest(parts []partInfo, restored uint64) []byte {
	var m []byte
	for _, p := range parts {
		if p.epoch <= restored {
			m = manifestLine(m, p.epoch, p.size, p.crc)
		}
	}
	return m
}

// describeParts reads the parts of epochs ≤ restored and returns their
// manifest (a restore from a checkpoint that recorded none).
func describeParts(dir string, restored uint64) ([]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var parts []partInfo
	for _, e := range entries {
		if n, ok := parseEpoch(e.Name()); ok && n <= restored {
			size, crc, err := checksumFile(filepath.Join(dir, e.Name()))
			if err != nil {
				return nil, err
			}
			parts = append(parts, partInfo{epoch: n, size: size, crc: crc})
		}
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].epoch < parts[j].epoch })
	return keptManifest(parts, restored), nil
}

func checksumFile(name string) (int64, uint32, error) {
	f, err := os.Open(name)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	h := crc32.New(castagnoli)
	n, err := io.Copy(h, f)
	return n, h.Sum32(), err
}

// Commit implements core.EpochSink. Parts are durable from their barrier
// on, and which survive a restore is decided by the checkpoint restored
// from, so there is nothing left to do here.
func (s *textSink) Commit(uint64) error { return nil }

// finishEpochs concatenates the parts into the final file.
func (s *textSink) finishEpochs() error {
	if err := s.closePart(); err != nil {
		return err
	}
	return s.epochs.combine(s.path, func(f *atomicFile) (func(string) error, func() error) {
		add := func(name string) error {
			part, err := os.Open(name)
			if err != nil {
				return err
			}
			defer part.Close()
			_, err = io.Copy(f.f, part)
			return err
		}
		return add, func() error { return nil }
	})
}

// combine writes the parts in ep.dir, in epoch order, into the final file
// at path (its temporary file, committed once whole) and removes the
// parts. open is given the temporary file and returns add, which appends
// one part (by its file name), and end, which completes the file (a
// footer). On failure the temporary file is removed and the parts stay.
func (ep *epochState) combine(path string, open func(f *atomicFile) (add func(part string) error, end func() error)) error {
	epochs, err := partEpochs(ep.dir)
	if err != nil {
		return err
	}
	f, err := createAtomic(path)
	if err != nil {
		return err
	}
	add, end := open(f)
	for _, e := range epochs {
		if err = add(filepath.Join(ep.dir, partName(e))); err != nil {
			break
		}
	}
	if err == nil {
		err = end()
	}
	if err != nil {
		f.abort()
		return err
	}
	if err := f.commit(); err != nil {
		return err
	}
	return os.RemoveAll(ep.dir)
}

// dropOpen closes and removes the part being written, if any: it is in no
// checkpoint (a restore would delete it), so a failed job does not leave
// it taking disk space. Parts made durable by a barrier stay.
func (ep *epochState) dropOpen() {
	if ep == nil || ep.part == nil {
		return
	}
	name := ep.part.Name()
	ep.part.Close()
	os.Remove(name)
	ep.part = nil
}
