package snapshot

import (
	"io/fs"
	"os"
)

// FS is the file system seam: the operations a Store needs.
type FS interface {
	MkdirAll(path string, perm fs.FileMode) error
	// Create creates (truncating) a file for writing.
	Create(path string) (File, error)
	ReadFile(path string) ([]byte, error)
	ReadDir(path string) ([]fs.DirEntry, error)
	Rename(from, to string) error
	RemoveAll(path string) error
	// SyncDir fsyncs a directory, making renames and creations in it
	// durable.
	SyncDir(path string) error
}

// File is a file being written.
type File interface {
	Write(p []byte) (int, error)
	Sync() error
	Close() error
}

// OS is the real file system.
type OS struct{}

func (OS) MkdirAll(p string, perm fs.FileMode) error { return os.MkdirAll(p, perm) }
func (OS) Create(p string) (File, error)             { return os.Create(p) }
func (OS) ReadFile(p string) ([]byte, error)         { return os.ReadFile(p) }
func (OS) ReadDir(p string) ([]fs.DirEntry, error)   { return os.ReadDir(p) }
func (OS) Rename(from, to string) error              { return os.Rename(from, to) }
func (OS) RemoveAll(p string) error                  { return os.RemoveAll(p) }
func (OS) SyncDir(p string) error {
	d, err := os.Open(p)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
