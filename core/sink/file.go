package sink

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// atomicFile is a file written under a temporary name in its destination's
// directory and renamed to the destination on commit.
type atomicFile struct {
	path string
	f    *os.File
}

// createAtomic creates the temporary file for path.
func createAtomic(path string) (*atomicFile, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if base == "" {
		return nil, fmt.Errorf("%q names a directory, not a file", path)
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create temporary file in %s: %w", dir, err)
	}
	return &atomicFile{path: path, f: f}, nil
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
