package jobfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"streamd/core"
	"streamd/core/source"
)

// inputs is what a file source's path: names: one file, or the files of a
// glob pattern or a directory (source.Expand), in name order.
type inputs struct {
	paths []string
	// many: the path is a pattern or a directory, read as one input
	// (source.Concat).
	many bool
	// stamps are the files as the job file names them, each with its size
	// ("in/a.csv 1234"), recorded in checkpoints (fileList) so that a
	// restore refuses a file list that changed.
	stamps []string
}

// inputFiles expands the path p of the file source being built and claims
// its files (and, for a pattern or directory, the files that may appear
// in it) against the sinks.
func (b *sourceBuild) inputFiles(p string) (*inputs, error) {
	full := b.f.path(p)
	st, statErr := os.Stat(full)
	in := &inputs{many: source.IsPattern(full) || (statErr == nil && st.IsDir())}
	if !in.many {
		b.f.claimFile(b.path+".path", full, "the input file")
		in.paths = []string{full}
		return in, nil
	}
	paths, err := source.Expand(full)
	if err != nil {
		return nil, b.errAt(".path", "%v", err)
	}
	in.paths = paths
	b.claimMany(in, p, full)
	// The sink is built after the source, which opens its files now: an
	// earlier run's output among them would fail on its header (or be
	// read) before the sink's own check could name it. Check here.
	if key, sp, dir, ok := b.f.sinkPath(); ok {
		if err := b.f.checkNotClaimed(key, sp, dir, "the sink would overwrite it"); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// sinkPath is the file (or, with parts, directory) the job's sink writes,
// from the decoded spec, with its key; ok is false for sinks without a
// path (stdout, discard) or none chosen yet.
func (f *File) sinkPath() (key, path string, dir, ok bool) {
	k, spec, chosen := sinkKinds.chosen(f.Spec.Sink.sinks)
	if !chosen {
		return "", "", false, false
	}
	v := reflect.ValueOf(spec)
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "", "", false, false
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return "", "", false, false
	}
	pv := v.FieldByName("Path")
	if !pv.IsValid() || pv.Kind() != reflect.String || pv.String() == "" {
		return "", "", false, false
	}
	parts := v.FieldByName("Parts")
	dir = parts.IsValid() && parts.Kind() == reflect.Pointer && !parts.IsNil()
	return "sink." + k.name + ".path", f.path(pv.String()), dir, true
}

// inputFilesLive claims the files of a live input (follow, watch) against
// the sinks: the one file, or the directory or pattern (the files that
// are there now and those that may appear), whose files it does not list
// (the live source looks for them as it runs).
func (b *sourceBuild) inputFilesLive(p string, many bool) (*inputs, error) {
	full := b.f.path(p)
	in := &inputs{many: many}
	if !many {
		b.f.claimFile(b.path+".path", full, "the input file")
		in.paths = []string{full}
		return in, nil
	}
	paths, err := source.Expand(full)
	if err != nil && !errors.Is(err, source.ErrNoFiles) {
		return nil, b.errAt(".path", "%v", err)
	}
	in.paths = paths
	b.claimMany(in, p, full)
	in.stamps = nil // the list changes as the job runs: the checkpoint's state names the files
	return in, nil
}

// claimMany claims the files in.paths of the directory or pattern p
// (full: resolved) and those that may appear in it, and stamps in with
// them.
func (b *sourceBuild) claimMany(in *inputs, p, full string) {
	for _, q := range in.paths {
		b.f.claimFile(b.path+".path", q, "an input file")
		size := int64(-1)
		if st, err := os.Stat(q); err == nil {
			size = st.Size()
		}
		name := q
		if !filepath.IsAbs(p) {
			if r, err := filepath.Rel(b.f.Dir, q); err == nil {
				name = r
			}
		}
		in.stamps = append(in.stamps, fmt.Sprintf("%s %d", name, size))
	}
	absPat, err := filepath.Abs(full)
	if err != nil {
		absPat = filepath.Clean(full)
	}
	var match func(string) bool
	if source.IsPattern(full) {
		match = func(abs string) bool { return source.Matches(absPat, abs) }
	} else {
		match = func(abs string) bool {
			return filepath.Dir(abs) == absPat && !strings.HasPrefix(filepath.Base(abs), ".")
		}
	}
	b.f.files = append(b.f.files, claimed{key: b.path + ".path", path: p, what: "the files of the input", match: match})
}

// open makes the source of the input: one file's, or the concatenation of
// the files' (source.Concat), with each file's source made by open.
func (in *inputs) open(b *sourceBuild, open func(path string) (core.Source, error)) (core.Source, error) {
	if !in.many {
		s, err := open(in.paths[0])
		if err != nil {
			return nil, b.errAt(".path", "%v", err)
		}
		return s, nil
	}
	s, err := source.Concat(in.paths, open)
	if err != nil {
		return nil, b.errAt(".path", "%v", err)
	}
	return s, nil
}

// fileList is a file source's description in a checkpoint: its spec and,
// for a glob or directory, the files it read, with their sizes, so that a
// restore whose file list differs (a file added, removed, renamed or
// grown) is refused as a changed source.
type fileList[T any] struct {
	Spec  T        `yaml:",inline"`
	Files []string `yaml:"files,omitempty"`
}

// describeFiles is spec as a checkpoint records it: with the file list of
// a glob or directory input, as written for one file.
func describeFiles[T any](spec T, in *inputs) any {
	if in == nil || !in.many {
		return spec
	}
	return fileList[T]{Spec: spec, Files: in.stamps}
}
