package source

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"

	"streamd/core"
	"streamd/core/internal/bom"
)

// readBufferSize is the buffer of text inputs read from files, in bytes:
// large enough that reading costs few system calls.
const readBufferSize = 256 << 10

// recordReader reads a text input one record at a time. CSV and JSONL
// implement it; the file sources fill batches from it directly, Stdin from
// its reader goroutine.
type recordReader interface {
	// read fills row (one value per schema field, every one overwritten)
	// with the next good record and returns its 1-based line. Malformed
	// records go to the ErrorPolicy inside read: it returns the policy's
	// error under Fail and skips them otherwise. It returns io.EOF after
	// the last record.
	read(row []core.Value) (line int64, err error)
}

// openInput returns r when it is set (its name in errors: path, or
// "stdin" when path is empty), or opens the file at path; in reads it
// decompressed as c says (auto: by the path's extension, then by the
// first bytes; see Compression) and without a leading byte order mark
// (bom.Reader). The closer is an *os.File (so that the caller can read it
// by blocks): the file itself, or for a compressed file the temporary file
// of its decompressed bytes (spill); nil for r, which is decompressed as
// it is read.
func openInput(kind, path string, r io.Reader, c Compression) (name string, in io.Reader, cl io.Closer, err error) {
	if r != nil {
		if path == "" {
			path = "stdin"
		}
		if c == CompressionNone {
			return path, bufio.NewReaderSize(bom.NewReader(r), 64<<10), nil, nil
		}
		// Decided on the first read, so that opening waits for no input.
		return path, bufio.NewReaderSize(bom.NewReader(&lazyDecoder{name: path, in: r, c: c}), 64<<10), nil, nil
	}
	if path == "" {
		return "", nil, nil, fmt.Errorf("%s source: no path and no reader", kind)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", nil, nil, fmt.Errorf("%s source: %w", kind, err)
	}
	st, err := f.Stat()
	if err == nil && st.IsDir() {
		f.Close()
		return "", nil, nil, fmt.Errorf("%s source %s: is a directory", kind, path)
	}
	if c != CompressionNone {
		if f, err = spill(path, f, c); err != nil {
			return "", nil, nil, fmt.Errorf("%s source %s: %w", kind, path, err)
		}
	}
	return path, bufio.NewReaderSize(bom.NewReader(f), readBufferSize), f, nil
}

// lazyDecoder decompresses in as c says, deciding (auto: by name, then by
// the first bytes) and reading the stream's header on the first Read, so
// that a source over a pipe starts without waiting for input.
type lazyDecoder struct {
	name string
	in   io.Reader
	c    Compression
	r    io.Reader
	err  error
}

func (l *lazyDecoder) Read(p []byte) (int, error) {
	if l.r == nil && l.err == nil {
		l.r, _, _, l.err = openDecompressed(l.name, l.in, l.c)
	}
	if l.err != nil {
		return 0, l.err
	}
	return l.r.Read(p)
}

// textSource is a finite source over a recordReader: a CSV or JSONL file,
// or a reader given in its place.
type textSource struct {
	schema *core.Schema
	rr     recordReader
	closer io.Closer // the file, if the source opened one
	eof    bool
	closed bool
}

func (s *textSource) Schema() *core.Schema { return s.schema }

// Next returns the next batch of up to core.BatchSize records, owned by the
// caller, or (nil, io.EOF) after the last one. It blocks while the input
// does (a file read); use Stdin for inputs that may stall. Under the Fail
// policy a malformed record makes Next return the *core.RecordError; the
// records before it in the same batch are dropped with the batch, since
// the job stops.
func (s *textSource) Next(ctx context.Context) (*core.Batch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.closed {
		return nil, errClosed
	}
	if s.eof {
		return nil, io.EOF
	}
	b, eof, err := fillBatch(s.rr, s.schema)
	s.eof = eof
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, io.EOF
	}
	return b, nil
}

// Close closes the file the source opened (not a reader it was given).
// Safe to call more than once.
func (s *textSource) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.closer != nil {
		return s.closer.Close()
	}
	return nil
}
