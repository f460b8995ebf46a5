package jobfile

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"streamd/core/sink"
)

// parts checks a file sink's `parts: n` (at b.path + ".parts") and its
// path p, the directory of parts: n between 1 and sink.MaxParts; p absent
// or a directory holding only part files (the sink replaces it whole);
// no `checkpoint:` (exactly-once output of parts is not built) and no
// `runtime.output_workers` (the parts are the output workers).
func (b *sinkBuild) parts(n int, p string) (int, error) {
	if n < 1 || n > sink.MaxParts {
		return 0, b.errAt(".parts", "parts must be between 1 and %d, not %d", sink.MaxParts, n)
	}
	if b.f.Spec.Checkpoint != nil {
		return 0, b.errAt(".parts", "parts cannot be combined with checkpoint: yet (exactly-once output is built for a single file); remove parts or checkpoint")
	}
	if b.f.Spec.Runtime.OutputWorkers != 0 {
		return 0, b.f.errAt("runtime.output_workers", "a sink with parts has one output worker per part; remove output_workers")
	}
	if err := sink.CheckPartsDir(p); err != nil {
		if _, serr := os.Lstat(p); serr == nil {
			return 0, b.errAt(".path", "%v (expected the path of a directory of parts, or of one to create)", err)
		}
		return 0, b.errAt(".path", "%v", err)
	}
	if err := b.f.checkParents(b.path+".path", p); err != nil {
		return 0, err
	}
	if err := b.f.checkNotClaimed(b.path+".path", p, true, "the sink would overwrite it"); err != nil {
		return 0, err
	}
	return n, nil
}

// checkSinkPath refuses, when the job is built, a file sink path that the
// sink could not replace at the end of the job: an existing directory,
// device, FIFO, socket or symbolic link (the sink renames its temporary
// file over the path, which would replace the link rather than write
// through it; core/sink refuses these too, but only once the job runs), or
// a path under an existing file. A path that does not exist yet is fine:
// the sink creates its directory. key is the job file key the path is at.
func (f *File) checkSinkPath(key, p string) error {
	if err := f.checkNotClaimed(key, p, false, "the sink would overwrite it"); err != nil {
		return err
	}
	st, err := os.Lstat(p)
	if err != nil {
		return f.checkParents(key, p)
	}
	if st.Mode().IsRegular() {
		// Replaced by renaming a file written beside it: its directory
		// must take new entries.
		return f.checkWritableDir(key, filepath.Dir(p), p)
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		return f.errAt(key, "%s is a symbolic link: the sink would replace the link with its output (expected the path of a regular file, or of one to create)", p)
	}
	return f.errAt(key, "%s is %s (expected the path of a regular file, or of one to create)", p, fileKind(st.Mode()))
}

// checkDeadLetterPath refuses a dead-letter path that cannot be opened for
// appending: an existing directory or socket (or a link to one), or a path
// under an existing file. The file is appended to, not replaced, so a
// device (/dev/stderr) or a FIFO is allowed.
func (f *File) checkDeadLetterPath(key, p string) error {
	st, err := os.Stat(p)
	if err != nil {
		if _, lerr := os.Lstat(p); lerr == nil {
			return nil // a dangling link: opening it creates its target
		}
		return f.checkParents(key, p)
	}
	if m := st.Mode(); m.IsDir() || m&fs.ModeSocket != 0 {
		return f.errAt(key, "%s is %s (expected the path of a file to append to, or of one to create)", p, fileKind(m))
	}
	if err := unix.Access(p, unix.W_OK); err != nil {
		return f.errAt(key, "%s cannot be appended to (%v)", p, err)
	}
	return nil
}

// checkParents refuses a path that cannot be created: its nearest
// existing parent is not a directory (out/result.csv where out is a
// file), or is a directory the job may not create entries in (no write or
// search permission, a read-only file system). It creates nothing, so
// that validate changes nothing on disk; a problem it cannot see (a full
// disk) is left to the sink, when the job runs.
func (f *File) checkParents(key, p string) error {
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err == nil {
			if !st.IsDir() {
				return f.errAt(key, "%s is not a directory, so %s cannot be created in it", d, p)
			}
			return f.checkWritableDir(key, d, p)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// checkWritableDir refuses existing directory d, in which p (d itself or
// a path under it) is to be created or replaced, if this process may not
// create entries in it: access(2) for write and search, which also
// reports a read-only file system. (Run as root, permission bits do not
// stop it and nor does this check.)
func (f *File) checkWritableDir(key, d, p string) error {
	if err := unix.Access(d, unix.W_OK|unix.X_OK); err != nil {
		return f.errAt(key, "%s cannot be created: directory %s is not writable (%v)", p, d, err)
	}
	return nil
}

func fileKind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}

// claimed is a file the job reads or appends to, at key in the job file.
type claimed struct {
	key, path, what string
	// match, if set, says whether an absolute path is among the files a
	// glob or directory input names, present or future (a sink written
	// there would be read by the next run).
	match func(abs string) bool
}

// claimFile records that the job being built reads or appends to path
// (what it is, for messages: "the input file"), so that checkNotClaimed
// refuses a sink that would replace it.
func (f *File) claimFile(key, path, what string) {
	if path == "" || path == "-" {
		return
	}
	f.files = append(f.files, claimed{key: key, path: path, what: what})
}

// checkNotClaimed refuses a sink path p (at key) that names a file the job
// reads or appends to (claimFile): the sink replaces its path when the job
// ends, so the job would overwrite its own input, a lookup table or its
// dead letters (and a restored run would read its own output); harm says
// so in the message. The dead-letter path is checked the same way against
// the input and the lookup tables, which it would append to. With dir,
// p is a directory of parts that the sink replaces whole: a claimed file
// inside it is refused too. Paths are compared cleaned and absolute, and,
// where both exist, as files (os.SameFile), which catches a symbolic or
// hard link to the same file; only regular files and directories are
// compared so (a device such as /dev/stderr is not anyone's input).
func (f *File) checkNotClaimed(key, p string, dir bool, harm string) error {
	abs := func(p string) string {
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
		return filepath.Clean(p)
	}
	ap := abs(p)
	pst, perr := os.Stat(p)
	if perr == nil && !pst.Mode().IsRegular() && !pst.IsDir() {
		pst, perr = nil, os.ErrInvalid
	}
	for _, c := range f.files {
		ac := abs(c.path)
		same := ac == ap
		if !same && perr == nil {
			if cst, err := os.Stat(c.path); err == nil && (cst.Mode().IsRegular() || cst.IsDir()) {
				same = os.SameFile(pst, cst)
			}
		}
		if same {
			return f.errAt(key, "%s is %s (%s, line %d): %s", p, c.what, c.key, f.line(c.key), harm)
		}
		if c.match != nil && c.match(ap) {
			return f.errAt(key, "%s is among %s %s (%s, line %d): %s", p, c.what, c.path, c.key, f.line(c.key), harm)
		}
		if dir && strings.HasPrefix(ac, ap+string(filepath.Separator)) {
			return f.errAt(key, "%s holds %s %s (%s, line %d): the sink replaces the directory whole", p, c.what, c.path, c.key, f.line(c.key))
		}
	}
	return nil
}

// line is the job file line of key (0 if unknown).
func (f *File) line(key string) int {
	l, _ := f.rawPos(f.pos(key))
	return l
}

// Output is a file a run of the job writes, for the run's report to name.
type Output struct {
	// What: "output" (the sink's) or "dead letters".
	What string
	// Path is the file, or the directory of parts; a relative path in
	// the job file is resolved against the job file's folder, as the
	// sink resolves it.
	Path string
	// Parts is the number of part files in Path; 0 for a single file.
	Parts int
	// Where names an output that is no file (a Kafka topic and its
	// brokers), Path then empty.
	Where string
}

// fileOutput is a file sink's Output: the file at path, or a directory of
// *parts part files.
func fileOutput(path string, parts *int) Output {
	o := Output{What: "output", Path: path}
	if parts != nil {
		o.Parts = *parts
	}
	return o
}

// Outputs names the files a run of the job writes: the sink's file or
// directory of parts (none for stdout and discard), then the dead-letter
// file when dead_letter_path is set.
func (f *File) Outputs() []Output {
	var out []Output
	if k, spec, ok := sinkKinds.chosen(f.Spec.Sink.sinks); ok && k.output != nil {
		switch o := k.output(spec); {
		case o.Path != "":
			o.Path = f.path(o.Path)
			out = append(out, o)
		case o.Where != "":
			out = append(out, o)
		}
	}
	if p := f.Spec.DeadLetterPath; p != "" {
		out = append(out, Output{What: "dead letters", Path: f.path(p)})
	}
	return out
}
