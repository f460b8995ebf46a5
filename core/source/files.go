package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"streamd/core"
)

// IsPattern says whether p is a glob pattern (it holds *, ? or [) rather
// than the name of one file or directory.
func IsPattern(p string) bool { return strings.ContainsAny(p, "*?[") }

// ErrNoFiles is returned by Expand when a pattern or directory names no
// file.
var ErrNoFiles = errors.New("no files")

// Expand returns the files a file source's path names, in name order
// (byte order of the whole path): the file itself; for a directory, its
// regular files (not its subdirectories, and not hidden files: names
// starting with '.'); for a glob pattern (filepath.Match syntax, plus **
// as a whole path segment for any number of directories, none included),
// the regular files that match, hidden ones left out unless the pattern's
// segment itself starts with '.'. A directory or pattern that names no
// file is ErrNoFiles; a malformed pattern is filepath.ErrBadPattern.
func Expand(p string) ([]string, error) {
	if !IsPattern(p) {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			return []string{p}, nil
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, e := range ents {
			if hidden(e.Name()) {
				continue
			}
			if regular(filepath.Join(p, e.Name())) {
				out = append(out, filepath.Join(p, e.Name()))
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("directory %s: %w in it", p, ErrNoFiles)
		}
		return out, nil // ReadDir sorts by name
	}
	segs := strings.Split(filepath.ToSlash(p), "/")
	for _, s := range segs {
		if _, err := path.Match(s, ""); err != nil {
			return nil, fmt.Errorf("pattern %q: %w", p, filepath.ErrBadPattern)
		}
	}
	// The fixed directories before the first segment with a pattern.
	i := 0
	for i < len(segs)-1 && !IsPattern(segs[i]) {
		i++
	}
	root := strings.Join(segs[:i], "/")
	switch {
	case root == "" && strings.HasPrefix(p, "/"):
		root = "/"
	case root == "":
		root = "."
	}
	var out []string
	err := filepath.WalkDir(root, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			if name == root {
				return err
			}
			return nil // an unreadable directory below: nothing of it matches
		}
		if name == root {
			return nil
		}
		rel := strings.Split(filepath.ToSlash(strings.TrimPrefix(strings.TrimPrefix(name, root), string(filepath.Separator))), "/")
		if root == "." {
			rel = strings.Split(filepath.ToSlash(name), "/")
		}
		pat := segs[i:]
		if d.IsDir() {
			if !prefixCanMatch(pat, rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if matchSegments(pat, rel) && regular(name) {
			out = append(out, name)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("pattern %s: %w match it", p, ErrNoFiles)
	}
	slices.Sort(out)
	return out, nil
}

func hidden(name string) bool { return strings.HasPrefix(name, ".") }

// regular says whether name is a regular file, following symbolic links.
func regular(name string) bool {
	st, err := os.Stat(name)
	return err == nil && st.Mode().IsRegular()
}

// segMatch matches one path segment: path.Match, with hidden names only
// for a pattern that starts with '.'.
func segMatch(pat, name string) bool {
	if hidden(name) && !hidden(pat) {
		return false
	}
	ok, _ := path.Match(pat, name)
	return ok
}

// matchSegments says whether the path segments name match pat, where a
// "**" segment matches any number of segments (none included) of
// directories that are not hidden.
func matchSegments(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for k := 0; k <= len(name)-1; k++ {
				if matchSegments(pat[1:], name[k:]) {
					return true
				}
				if hidden(name[k]) {
					return false
				}
			}
			return false
		}
		if len(name) == 0 || !segMatch(pat[0], name[0]) {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// prefixCanMatch says whether the directory dir (segments) can hold files
// that match pat: WalkDir skips the directories that cannot.
func prefixCanMatch(pat, dir []string) bool {
	for len(dir) > 0 {
		if len(pat) == 0 {
			return false
		}
		if pat[0] == "**" {
			return !hidden(dir[0]) || matchSegments(pat[1:], dir) || prefixCanMatch(pat[1:], dir)
		}
		if len(pat) == 1 || !segMatch(pat[0], dir[0]) {
			return false // the last segment names files, not directories
		}
		pat, dir = pat[1:], dir[1:]
	}
	return true
}

// Concat returns one source of the files at paths, read in the order
// given as one input: open makes the source of one file (a CSV file reads
// its own header, checked against the columns). Every file's schema must
// be the first's. A record's Pos is its line or row in its file with the
// file's ordinal in the high bits (core.PosFileShift), so that positions
// order the records of all the files; errors and dead letters name the
// file and the line in it.
//
// When every file's source is core.Splittable and can keep its promise,
// so is the concatenation: its blocks are file 0's blocks, then file 1's,
// and so on, so the block layout depends on the files alone; when they
// also know where their blocks start (core.BlockStarts, core.Sized:
// Parquet), so does it, counting the records of the files before. Next
// reads the files in turn, its batches those of each file's Next, which
// end at each file's end. Every file is opened (and, for a text file,
// indexed) when Concat is called and stays open until Close.
func Concat(paths []string, open func(path string) (core.Source, error)) (core.Source, error) {
	if len(paths) == 0 {
		return nil, ErrNoFiles
	}
	c := &concat{paths: paths}
	for _, p := range paths {
		s, err := open(p)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.srcs = append(c.srcs, s)
		if len(paths) > 1 {
			pb, ok := s.(posBased)
			if !ok {
				c.Close()
				return nil, fmt.Errorf("%s: a %T cannot be one of several files", p, s)
			}
			pb.setPosBase(int64(len(c.srcs)-1) << core.PosFileShift)
		}
		if len(c.srcs) > 1 && s.Schema().String() != c.srcs[0].Schema().String() {
			c.Close()
			return nil, fmt.Errorf("%s: schema %s differs from %s's %s: the files of one source must have the same columns", p, s.Schema(), paths[0], c.srcs[0].Schema())
		}
	}
	c.first = make([]int, len(c.srcs)+1)
	splittable, counted := true, true
	for i, s := range c.srcs {
		sp, ok := s.(core.Splittable)
		n := 0
		if ok {
			n = sp.Blocks()
		}
		if !ok || n < 0 || (n == 0 && !emptyFile(s)) {
			splittable = false
		}
		_, bs := s.(core.BlockStarts)
		_, sized := s.(core.Sized)
		counted = counted && bs && sized
		c.first[i+1] = c.first[i] + n
	}
	if !splittable {
		c.first = nil
		return c, nil
	}
	if counted {
		c.before = make([]int64, len(c.srcs)+1)
		for i, s := range c.srcs {
			c.before[i+1] = c.before[i] + s.(core.Sized).Size()
		}
		return &countedConcat{splitConcat{c}}, nil
	}
	return &splitConcat{c}, nil
}

// emptyFile says whether a source with no blocks has no blocks because its
// file has no records (a text file's header alone, an empty Parquet
// file), not because it cannot be read by blocks.
func emptyFile(s core.Source) bool {
	switch s.(type) {
	case *blockText, *csvParallel, *ParquetSource:
		return true
	}
	return false
}

// concat reads its files' sources in turn.
type concat struct {
	paths []string
	srcs  []core.Source
	cur   int   // the source Next reads
	first []int // first[i] is file i's first block; nil if not splittable
	// before[i] is the number of records in the files before file i
	// (countedConcat).
	before []int64
}

func (c *concat) Schema() *core.Schema { return c.srcs[0].Schema() }

// Next returns file cur's next batch, moving on to the next file at each
// file's end, and (nil, io.EOF) after the last file's.
func (c *concat) Next(ctx context.Context) (*core.Batch, error) {
	for c.cur < len(c.srcs) {
		b, err := c.srcs[c.cur].Next(ctx)
		if err == io.EOF {
			c.cur++
			continue
		}
		return b, err
	}
	return nil, io.EOF
}

// Close closes every file's source and returns the first error.
func (c *concat) Close() error {
	var first error
	for _, s := range c.srcs {
		if err := s.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// splitConcat is a concat whose files can all be read by blocks
// (core.Splittable).
type splitConcat struct{ *concat }

// Blocks is the sum of the files' blocks.
func (c *splitConcat) Blocks() int { return c.first[len(c.first)-1] }

// file is the file holding block b and b's number in it.
func (c *splitConcat) file(b int) (int, int) {
	// The last file whose first block is ≤ b, skipping empty files.
	i, _ := slices.BinarySearch(c.first, b+1)
	return i - 1, b - c.first[i-1]
}

// ReadBlock reads block b of the file that holds it (core.Splittable).
func (c *splitConcat) ReadBlock(ctx context.Context, b int, errs *core.ErrorPolicy, emit func(*core.Batch) error) error {
	if b < 0 || b >= c.Blocks() {
		return fmt.Errorf("files %s …: no block %d (%d in %d files)", c.paths[0], b, c.Blocks(), len(c.paths))
	}
	i, lb := c.file(b)
	return c.srcs[i].(core.Splittable).ReadBlock(ctx, lb, errs, emit)
}

// countedConcat is a splitConcat whose files know their record counts
// and where their blocks start (Parquet files).
type countedConcat struct{ splitConcat }

// Size is the number of records in all the files (core.Sized).
func (c *countedConcat) Size() int64 { return c.before[len(c.before)-1] }

// BlockStart is the number of records before block b: those of the files
// before its file, and of the blocks before it in its file
// (core.BlockStarts).
func (c *countedConcat) BlockStart(b int) int64 {
	if b >= c.Blocks() {
		return c.Size()
	}
	i, lb := c.file(b)
	return c.before[i] + c.srcs[i].(core.BlockStarts).BlockStart(lb)
}

// Matches says whether the file name matches pattern as Expand matches
// files (both cleaned, and both absolute or both relative to the same
// directory).
func Matches(pattern, name string) bool {
	return matchSegments(strings.Split(filepath.ToSlash(pattern), "/"), strings.Split(filepath.ToSlash(name), "/"))
}

// posBased is a source of one file that can put its file's ordinal in
// the positions it reports (core.PosFileShift): its records' Pos and its
// malformed records' lines. Call setPosBase before the first read.
type posBased interface {
	setPosBase(base int64)
}

func (s *textSource) setPosBase(base int64) {
	switch r := s.rr.(type) {
	case *csvReader:
		r.base = base
	case *jsonlReader:
		r.base = base
	}
}

func (s *blockText) setPosBase(base int64) {
	switch r := s.own.rr.(type) { // fresh clones it, base included
	case *csvReader:
		r.base = base
	case *jsonlReader:
		r.base = base
	}
}

func (p *csvParallel) setPosBase(base int64) {
	p.seq.base = base // the workers' readers are its clones
	p.bt.setPosBase(base)
}

func (s *ParquetSource) setPosBase(base int64) { s.base = base }
