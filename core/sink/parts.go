package sink

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"streamd/core"
)

// A parts sink (core.PartSink) writes a directory of n part files,
// part-00000.<ext> … part-<n-1>.<ext>, each a file sink of its own (CSV
// parts each with the header) used by one goroutine. The parts are
// written in a temporary directory beside the destination
// (".<name>.tmp-*"); Close commits every part (fsync), fsyncs the
// temporary directory and renames it to the destination. An earlier
// directory of parts there is first renamed aside (".<name>.old-*") and
// removed after the rename, so the destination never holds a mix of two
// runs' parts; a crash between the two renames leaves the earlier parts
// under the .old name. Abort (or a failed Close) removes the temporary
// directory and leaves the destination as it was.

// MaxParts bounds the number of parts of a parts sink.
const MaxParts = 256

// CSVParts returns a parts sink writing n CSV files (see CSVOptions) into
// the directory dir. n must be between 1 and MaxParts.
func CSVParts(dir string, n int, opts CSVOptions) core.Sink {
	return &partsSink{kind: "csv", dir: dir, n: n, newPart: textPart("csv", csvFormatOf(opts))}
}

// JSONLParts returns a parts sink writing n JSON lines files into dir.
func JSONLParts(dir string, n int) core.Sink {
	return &partsSink{kind: "jsonl", dir: dir, n: n, newPart: textPart("jsonl", jsonFormatOf)}
}

// ParquetParts returns a parts sink writing n Parquet files (see
// ParquetOptions; each with its own row groups and footer) into dir.
func ParquetParts(dir string, n int, opts ParquetOptions) core.Sink {
	return &partsSink{kind: "parquet", dir: dir, n: n, newPart: func(path string) core.Sink { return Parquet(path, opts) }}
}

// textPart makes the text file sinks of a parts sink.
func textPart(kind string, newFormat func() format) func(path string) core.Sink {
	return func(path string) core.Sink {
		return &textSink{kind: kind, name: path, path: path, newFormat: newFormat}
	}
}

// PartName is the file name of part p of a parts sink of kind ext ("csv",
// "jsonl").
func PartName(p int, ext string) string { return fmt.Sprintf("part-%05d.%s", p, ext) }

var partFile = regexp.MustCompile(`^part-[0-9]{5}\.(csv|jsonl|parquet)$`)

// CheckPartsDir says whether dir may be replaced by a parts sink's
// output: it does not exist, or it is a directory holding nothing but
// part files (part-NNNNN.csv, .jsonl or .parquet: an earlier run's
// output). A
// directory holding anything else is refused, so that a mistyped path
// cannot remove unrelated files.
func CheckPartsDir(dir string) error {
	st, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s exists and is not a directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !partFile.MatchString(e.Name()) {
			return fmt.Errorf("%s holds %s, which is not a part file (part-NNNNN.csv, .jsonl or .parquet): the sink replaces the whole directory", dir, e.Name())
		}
	}
	return nil
}

type partsSink struct {
	kind    string
	dir     string
	n       int
	newPart func(path string) core.Sink // a file sink of the part's kind
	tmp     string                      // the temporary directory, once opened
	parts   []core.Sink
	state   state
	err     error
}

func (s *partsSink) fail(err error) error {
	if s.err == nil {
		s.err = fmt.Errorf("%s sink %s: %w", s.kind, s.dir, err)
	}
	return s.err
}

// Open makes the temporary directory and opens every part in it.
func (s *partsSink) Open(schema *core.Schema) error {
	if s.state != created {
		return s.fail(errors.New("opened twice"))
	}
	s.state = opened
	if s.n < 1 || s.n > MaxParts {
		return s.fail(fmt.Errorf("%d parts (expected 1 to %d)", s.n, MaxParts))
	}
	if err := CheckPartsDir(s.dir); err != nil {
		return s.fail(err)
	}
	parent, base := filepath.Split(filepath.Clean(s.dir))
	if parent == "" {
		parent = "."
	}
	tmp, err := os.MkdirTemp(parent, "."+base+".tmp-*")
	if err != nil {
		return s.fail(fmt.Errorf("create temporary directory in %s: %w", parent, err))
	}
	s.tmp = tmp
	// MkdirTemp makes it 0700, which the rename would keep: give the
	// directory the mode that goes with the parts' 0644 (file.go).
	if err := os.Chmod(tmp, 0o755); err != nil {
		s.discard()
		return s.fail(err)
	}
	for p := range s.n {
		path := filepath.Join(tmp, PartName(p, s.kind))
		part := s.newPart(path)
		s.parts = append(s.parts, part)
		if err := part.Open(schema); err != nil {
			s.discard()
			return s.fail(err)
		}
	}
	return nil
}

// Parts implements core.PartSink.
func (s *partsSink) Parts() int { return s.n }

// Part implements core.PartSink: part p, a file sink of its own.
func (s *partsSink) Part(p int) core.PartWriter { return s.parts[p] }

// Write is not how a parts sink is written (core.PartSink): it fails.
func (s *partsSink) Write(*core.Batch) error {
	return s.fail(errors.New("a sink of parts is written part by part"))
}

// Close commits every part, then puts the directory in place.
func (s *partsSink) Close() error {
	if s.state == done {
		return s.err
	}
	if s.state != opened {
		s.state = done
		return s.fail(errNotOpen)
	}
	s.state = done
	if s.err != nil {
		s.discard()
		return s.err
	}
	for _, p := range s.parts {
		if err := p.Close(); err != nil {
			s.discard()
			return s.fail(err)
		}
	}
	if err := s.replace(); err != nil {
		s.discard()
		return s.fail(err)
	}
	return nil
}

// replace renames the temporary directory to the destination, moving an
// earlier one aside first and removing it after.
func (s *partsSink) replace() error {
	if err := syncDir(s.tmp); err != nil {
		return err
	}
	if err := CheckPartsDir(s.dir); err != nil {
		return err // something else appeared there while the job ran
	}
	parent, base := filepath.Split(filepath.Clean(s.dir))
	if parent == "" {
		parent = "."
	}
	old := ""
	if _, err := os.Lstat(s.dir); err == nil {
		f, err := os.MkdirTemp(parent, "."+base+".old-*")
		if err != nil {
			return err
		}
		old = f
		if err := os.Rename(s.dir, filepath.Join(old, base)); err != nil {
			os.Remove(old)
			return err
		}
	}
	if err := os.Rename(s.tmp, s.dir); err != nil {
		if old != "" {
			os.Rename(filepath.Join(old, base), s.dir) // put the earlier output back
			os.Remove(old)
		}
		return err
	}
	s.tmp = ""
	err := syncDir(parent)
	if old != "" {
		if rerr := os.RemoveAll(old); err == nil {
			err = rerr
		}
	}
	return err
}

// discard aborts the parts and removes the temporary directory.
func (s *partsSink) discard() {
	for _, p := range s.parts {
		p.Abort()
	}
	if s.tmp != "" {
		os.RemoveAll(s.tmp)
		s.tmp = ""
	}
}

// Abort discards every part; the destination is left as it was.
func (s *partsSink) Abort() {
	if s.state == done {
		return
	}
	s.state = done
	s.discard()
}
