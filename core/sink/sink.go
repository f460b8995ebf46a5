package sink

import (
	"errors"
	"fmt"
	"io"
	"os"

	"streamd/core"
)

// bufSize is the output buffer, in bytes: formatted records collect in it
// and are written out when it holds at least this much.
const bufSize = 256 << 10

// CSV returns a sink that writes CSV (see CSVOptions) to the file at path,
// atomically: nothing appears under path before Close succeeds. An invalid
// delimiter or an unwritable directory is an error from Open.
func CSV(path string, opts CSVOptions) core.Sink {
	return &textSink{kind: "csv", name: path, path: path, newFormat: csvFormatOf(opts)}
}

// JSONL returns a sink that writes one JSON object per record to the file
// at path, atomically (see CSV).
func JSONL(path string) core.Sink {
	return &textSink{kind: "jsonl", name: path, path: path, newFormat: jsonFormatOf}
}

// Stdout returns a sink that writes format "csv" (with opts) or "jsonl" to
// w (os.Stdout in production), buffered: output reaches w when the buffer
// fills and on Close, which does not close w. Abort drops what is still
// buffered; what was written before stays written.
func Stdout(format string, w io.Writer, opts CSVOptions) (core.Sink, error) {
	s := &textSink{kind: format, name: "stdout", out: w}
	switch format {
	case "csv":
		s.newFormat = csvFormatOf(opts)
	case "jsonl":
		s.newFormat = jsonFormatOf
	default:
		return nil, fmt.Errorf("stdout sink: unknown format %q (expected csv or jsonl)", format)
	}
	return s, nil
}

type state uint8

const (
	created state = iota
	opened
	done // closed or aborted
)

// textSink formats batches into buf and writes buf to out: the temporary
// file of a file sink, or the writer of a Stdout sink. Used by one
// goroutine.
type textSink struct {
	kind      string // "csv" or "jsonl", for errors
	name      string // the path, or "stdout"
	path      string // "" for Stdout
	newFormat func() format
	format    format       // the sink's own (Write), made by Open
	schema    *core.Schema // what Open was given
	file      *atomicFile
	out       io.Writer
	buf       []byte
	state     state
	// positional: Positions switched the sink to WriteAt (file sinks only).
	positional bool
	err        error       // the first write error; every later call returns it
	epochs     *epochState // exactly-once mode (epochs.go), nil otherwise
	// checked is what VerifyOutput found (OpenEpochs starts from it).
	checked verifiedParts
}

var errNotOpen = errors.New("sink is not open")

func (s *textSink) fail(err error) error {
	if s.err == nil {
		s.err = fmt.Errorf("%s sink %s: %w", s.kind, s.name, err)
	}
	return s.err
}

// Open creates the temporary file (file sinks) and formats the header.
func (s *textSink) Open(schema *core.Schema) error {
	if s.state != created {
		return s.fail(errors.New("opened twice"))
	}
	s.buf = make([]byte, 0, bufSize+bufSize/4)
	s.format, s.schema = s.newFormat(), schema
	var err error
	if s.buf, err = s.format.open(s.buf, schema); err != nil {
		return s.fail(err)
	}
	if s.path != "" {
		if st, err := os.Lstat(s.path); err == nil && !st.IsDir() && !st.Mode().IsRegular() {
			// Renaming over a device, FIFO or symlink would replace it.
			return s.fail(fmt.Errorf("%s exists and is not a regular file", s.path))
		}
		if s.file, err = createAtomic(s.path); err != nil {
			return s.fail(err)
		}
		s.out = s.file
	}
	s.state = opened
	return nil
}

// Write formats the records of b; b is borrowed (the caller releases it).
// Output is written when the buffer fills; a write error (a full disk) is
// returned here or by a later call. Marker batches are ignored.
func (s *textSink) Write(b *core.Batch) error {
	if s.err != nil {
		return s.err
	}
	if s.state != opened || s.positional {
		return s.fail(errNotOpen)
	}
	if b.Kind != core.Data {
		return nil
	}
	s.buf = s.format.batch(s.buf, b)
	if len(s.buf) >= bufSize || s.path == "" {
		// Stdout is written batch by batch, so that a slow input's
		// records are not held back.
		return s.flush()
	}
	return nil
}

// NewEncoder returns an encoder of the sink's format with caches of its
// own (core.EncodingSink). Call it after a successful Open.
func (s *textSink) NewEncoder() core.Encoder {
	f := s.newFormat()
	f.open(nil, s.schema) // checked by Open; the header is the sink's
	return encoder{f}
}

// encoder is a format used by one goroutine, apart from the sink's.
type encoder struct{ f format }

func (e encoder) Encode(dst []byte, b *core.Batch) []byte { return e.f.batch(dst, b) }

// WriteEncoded adds bytes made by encoders (core.EncodingSink): buffered
// and written as Write's output is, into the current epoch's part in
// exactly-once mode.
func (s *textSink) WriteEncoded(p []byte) error {
	if s.err != nil {
		return s.err
	}
	if s.state != opened || s.positional {
		return s.fail(errNotOpen)
	}
	s.buf = append(s.buf, p...)
	if len(s.buf) >= bufSize || s.path == "" {
		return s.flush()
	}
	return nil
}

// Positional implements core.PositionalSink: file sinks only.
func (s *textSink) Positional() bool { return s.path != "" }

// Positions implements core.PositionalSink for file sinks outside
// exactly-once mode: the buffer (the header) is written out and the
// encoded bytes start after it.
func (s *textSink) Positions() (int64, bool, error) {
	if s.err != nil {
		return 0, false, s.err
	}
	if s.state != opened {
		return 0, false, s.fail(errNotOpen)
	}
	if s.file == nil || s.epochs != nil {
		return 0, false, nil
	}
	if err := s.flush(); err != nil {
		return 0, false, err
	}
	off, err := s.file.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, false, s.fail(err)
	}
	s.positional = true
	return off, true, nil
}

// WriteAt writes encoded bytes at off (positional mode; any goroutine).
// A failure is returned; Close after one is the caller's to avoid (the
// runtime aborts the sink).
func (s *textSink) WriteAt(p []byte, off int64) error {
	if !s.positional {
		return fmt.Errorf("%s sink %s: WriteAt before Positions", s.kind, s.name)
	}
	if _, err := s.file.f.WriteAt(p, off); err != nil {
		return fmt.Errorf("%s sink %s: %w", s.kind, s.name, err)
	}
	return nil
}

func (s *textSink) flush() error {
	if len(s.buf) == 0 {
		return nil
	}
	_, err := s.out.Write(s.buf)
	s.buf = s.buf[:0]
	if err != nil {
		return s.fail(err)
	}
	return nil
}

// Close writes what is buffered and completes the output: a file sink
// fsyncs its temporary file, renames it to the final path and fsyncs the
// directory. If that fails the temporary file is removed and the error
// returned; an earlier file at the path is left as it was. Safe to call
// more than once (later calls return the first error).
func (s *textSink) Close() error {
	if s.state == done {
		return s.err
	}
	if s.state != opened {
		s.state = done
		return s.fail(errNotOpen)
	}
	s.state = done
	err := s.err
	if s.epochs != nil {
		if err == nil {
			err = s.finishEpochs()
		}
		s.buf = nil
		if err != nil {
			return s.fail(err)
		}
		return nil
	}
	if err == nil {
		err = s.flush()
	}
	if s.file != nil {
		if err != nil {
			s.file.abort()
		} else if cerr := s.file.commit(); cerr != nil {
			err = s.fail(cerr)
		}
	}
	s.buf = nil
	return err
}

// Abort discards the output: a file sink removes its temporary file; a
// Stdout sink drops its buffer. Abort after Close does nothing.
func (s *textSink) Abort() {
	if s.state == done {
		return
	}
	s.state = done
	if s.file != nil {
		s.file.abort()
	}
	s.epochs.dropOpen()
	s.buf = nil
}
