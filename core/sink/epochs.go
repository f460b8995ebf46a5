package sink

import (
	"errors"
	"fmt"
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

// epochState is a file sink's epoch bookkeeping.
type epochState struct {
	dir   string   // <path>.parts
	epoch uint64   // the epoch being written
	part  *os.File // its part file, opened on first write
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
	var err error
	if s.buf, err = s.format.open(s.buf, schema); err != nil {
		return s.fail(err)
	}
	if st, err := os.Lstat(s.path); err == nil && !st.IsDir() && !st.Mode().IsRegular() {
		return s.fail(fmt.Errorf("%s exists and is not a regular file", s.path))
	}
	ep := &epochState{dir: s.path + ".parts", epoch: restored + 1}
	if restored == 0 {
		if err := os.RemoveAll(ep.dir); err != nil {
			return s.fail(err)
		}
	} else {
		s.buf = s.buf[:0] // the header is in epoch 1's part
		entries, err := os.ReadDir(ep.dir)
		if err != nil {
			return s.fail(fmt.Errorf("restore from checkpoint %d: output parts: %w", restored, err))
		}
		for _, e := range entries {
			if n, ok := parseEpoch(e.Name()); !ok || n > restored {
				if err := os.RemoveAll(filepath.Join(ep.dir, e.Name())); err != nil {
					return s.fail(err)
				}
			}
		}
	}
	if err := os.MkdirAll(ep.dir, 0o755); err != nil {
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
	}
	return ep.part.Write(p)
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

// Commit implements core.EpochSink. Parts are durable from their barrier
// on, and which survive a restore is decided by the checkpoint restored
// from, so there is nothing left to do here.
func (s *textSink) Commit(uint64) error { return nil }

// finishEpochs concatenates the parts into the final file.
func (s *textSink) finishEpochs() error {
	if err := s.closePart(); err != nil {
		return err
	}
	entries, err := os.ReadDir(s.epochs.dir)
	if err != nil {
		return err
	}
	var epochs []uint64
	for _, e := range entries {
		if n, ok := parseEpoch(e.Name()); ok {
			epochs = append(epochs, n)
		}
	}
	sort.Slice(epochs, func(i, j int) bool { return epochs[i] < epochs[j] })
	f, err := createAtomic(s.path)
	if err != nil {
		return err
	}
	for _, e := range epochs {
		part, err := os.Open(filepath.Join(s.epochs.dir, partName(e)))
		if err == nil {
			_, err = io.Copy(f.f, part)
			part.Close()
		}
		if err != nil {
			f.abort()
			return err
		}
	}
	if err := f.commit(); err != nil {
		return err
	}
	return os.RemoveAll(s.epochs.dir)
}
