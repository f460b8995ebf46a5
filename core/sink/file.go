package sink

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// atomicFile is a file written under a temporary name in its destination's
// directory and renamed to the destination on commit.
type atomicFile struct {
	path string
	f    *os.File
}

// createAtomic creates the temporary file for path. The file holds an
// exclusive flock(2) while it is written, which the kernel drops when the
// process ends, however it ends: temporary files of path that nobody holds
// are left by runs killed (SIGKILL, a crash) before they could remove
// them, and are removed first. A run writing the same path now keeps its
// file.
func createAtomic(path string) (*atomicFile, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if base == "" {
		return nil, fmt.Errorf("%q names a directory, not a file", path)
	}
	removeStale(filepath.Join(dir, "."+base+".tmp-*"))
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create temporary file in %s: %w", dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil && !errors.Is(err, unix.ENOTSUP) && !errors.Is(err, unix.EOPNOTSUPP) {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("lock temporary file %s: %w", f.Name(), err)
	}
	return &atomicFile{path: path, f: f}, nil
}

// removeStale removes the files matching pattern that no process holds a
// lock on (best effort: a file it cannot open or lock is left alone).
func removeStale(pattern string) {
	names, _ := filepath.Glob(pattern)
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			os.Remove(name) // still locked by us: nobody opens it meanwhile to write
		}
		f.Close()
	}
}

func (a *atomicFile) Write(p []byte) (int, error) { return a.f.Write(p) }

// commit makes the file durable and visible under its final name: fsync,
// close, rename, fsync of the directory. On failure the temporary file is
// removed.
func (a *atomicFile) commit() error {
	tmp := a.f.Name()
	err := a.f.Chmod(0o644)
	if err == nil {
		err = a.f.Sync()
	}
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, a.path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(a.path))
}

// abort closes and removes the temporary file.
func (a *atomicFile) abort() {
	a.f.Close()
	os.Remove(a.f.Name())
}

// syncDir fsyncs a directory so that a rename in it survives a crash.
// Filesystems that cannot sync directories (EINVAL) are not an error.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
		err = nil
	}
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
