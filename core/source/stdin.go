package source

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"streamd/core"
	"streamd/core/internal/bom"
)

// StdinOptions configures a Stdin source.
type StdinOptions struct {
	// Reader is read instead of os.Stdin (tests). Close closes it if it is
	// an io.Closer.
	Reader io.Reader
	// Header says the first CSV record holds the column names (csv only;
	// the job file's default is true).
	Header bool
	// Delimiter separates CSV fields; 0 means ','.
	Delimiter rune
	// Columns types the fields: for csv as CSVOptions.Columns, for jsonl
	// the object members to read (required).
	Columns []core.Field
	// JSON, when set, configures formats jsonl and json in place of
	// Columns: fields with paths, explode (its Format is taken from the
	// format argument: lines for jsonl, auto for json).
	JSON *JSONOptions
	// Compression is how the input is compressed. The zero value is auto:
	// by the input's first bytes (Sniff), decided on the first read, so
	// that Stdin does not wait for input to start (a CSV header is read
	// at once all the same).
	Compression Compression
	// Times says how Timestamp fields are written (as CSVOptions.Times).
	Times TimeFormats
	// MaxQuotedLines and MaxQuotedBytes bound a CSV quoted field that
	// spans line ends, as CSVOptions's (0: the defaults).
	MaxQuotedLines int
	MaxQuotedBytes int64
}

// closeWait bounds how long Close waits for the reader goroutine after
// closing the input: a read from a terminal, which closing does not
// interrupt, is left to finish on its own.
const closeWait = time.Second

// Stdin returns a source of standard input in format "csv", "jsonl" or
// "json", parsed as by CSV, JSONL and JSON (json: a top-level array when
// the input starts with '[', else a stream of values) (the input is named "stdin" in errors). A
// reader goroutine parses records as they arrive, so that a slow or
// stalled input never holds a record back: Next returns what has arrived
// at most core.Linger ns after the first record of the batch did, a full
// batch at once, and (nil, io.EOF) at the end. Next returns ctx.Err() as
// soon as ctx is done, whatever the input does.
//
// For csv with a header and no Columns, Stdin reads the header line before
// it returns (the schema comes from it), so it blocks until that line
// arrives.
//
// Close stops the goroutine: it closes the input if it is an io.Closer
// (which unblocks a pending read from a pipe) and waits up to a second for
// the goroutine to return.
func Stdin(format string, opts StdinOptions, errs *core.ErrorPolicy) (core.Source, error) {
	in := opts.Reader
	if in == nil {
		in = os.Stdin
	}
	var (
		rr     recordReader
		schema *core.Schema
		rin    = bom.NewReader(in) // s.in stays in, for Close
	)
	if opts.Compression != CompressionNone {
		rin = bom.NewReader(&lazyDecoder{name: "stdin", in: in, c: opts.Compression})
	}
	switch format {
	case "csv":
		r, err := newCSVReader("stdin", rin, CSVOptions{Header: opts.Header, Delimiter: opts.Delimiter, Columns: opts.Columns, Times: opts.Times,
			MaxQuotedLines: opts.MaxQuotedLines, MaxQuotedBytes: opts.MaxQuotedBytes}, errs)
		if err != nil {
			return nil, err
		}
		rr, schema = r, r.schema
	case "jsonl", "json":
		jo := jsonlOptions(opts.Columns)
		if opts.JSON != nil {
			jo = *opts.JSON
		}
		if jo.Times == nil {
			jo.Times = opts.Times
		}
		jo.Format = JSONLines
		if format == "json" {
			jo.Format = JSONAuto // an array or a stream of values, by the first byte
		}
		r, err := newJSONReader(format, "stdin", rin, jo, errs)
		if err != nil {
			return nil, err
		}
		rr, schema = r, r.schema
	default:
		return nil, fmt.Errorf("stdin source: unknown format %q (expected csv, jsonl or json)", format)
	}
	s := &stdinSource{
		schema: schema,
		in:     in,
		cur:    core.NewBatch(schema),
		ready:  make(chan struct{}, 1),
		space:  make(chan struct{}, 1),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
		timer:  time.NewTimer(time.Hour),
	}
	s.timer.Stop()
	go s.run(rr)
	return s, nil
}

// stdinSource hands batches from its reader goroutine to Next. The
// goroutine appends each parsed record to cur under mu (a lock per record:
// uncontended, and cheap next to parsing); Next takes cur when it is full,
// when it has lingered, or at the end.
type stdinSource struct {
	schema *core.Schema
	in     io.Reader

	mu    sync.Mutex
	cur   *core.Batch // filled by the goroutine; never nil before Close
	first time.Time   // when cur got its first record
	err   error       // why the goroutine stopped (io.EOF at the end), set after its last record

	ready  chan struct{} // poked when cur gets its first record, fills, or err is set
	space  chan struct{} // poked when Next takes a full cur
	done   chan struct{} // closed by Close
	exited chan struct{} // closed when the goroutine returns
	timer  *time.Timer   // Next's linger timer (used by Next only)
	closed bool
}

func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// run is the reader goroutine.
func (s *stdinSource) run(rr recordReader) {
	defer close(s.exited)
	row := make([]core.Value, s.schema.Width())
	for {
		line, err := rr.read(row)
		s.mu.Lock()
		if err != nil {
			s.err = err
			s.mu.Unlock()
			poke(s.ready)
			return
		}
		for s.cur.Full() {
			s.mu.Unlock()
			select {
			case <-s.space:
			case <-s.done:
				return
			}
			s.mu.Lock()
		}
		first := s.cur.Len == 0
		if first {
			s.first = time.Now()
		}
		copy(s.cur.Append(0, 0, core.NoTime, line), row)
		full := s.cur.Full()
		s.mu.Unlock()
		if first || full {
			poke(s.ready)
		}
		select {
		case <-s.done:
			return
		default:
		}
	}
}

func (s *stdinSource) Schema() *core.Schema { return s.schema }

// Next returns the records that have arrived, owned by the caller: a full
// batch as soon as there is one, else a partial one core.Linger ns after
// its first record arrived. It blocks until then, until the end of input
// ((nil, io.EOF) once every record has been returned) or until ctx is done
// (ctx.Err()). An error of the input or, under Fail, a malformed record's
// *core.RecordError is returned after the records before it.
func (s *stdinSource) Next(ctx context.Context) (*core.Batch, error) {
	if s.closed {
		return nil, errClosed
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s.mu.Lock()
		n := s.cur.Len
		var wait time.Duration
		if n > 0 {
			wait = core.Linger - time.Since(s.first)
			if s.cur.Full() || s.err != nil || wait <= 0 {
				b := s.cur
				s.cur = core.NewBatch(s.schema)
				s.mu.Unlock()
				if b.Full() {
					poke(s.space)
				}
				return b, nil
			}
		} else if s.err != nil {
			err := s.err
			s.mu.Unlock()
			return nil, err
		}
		s.mu.Unlock()
		if n == 0 {
			select {
			case <-s.ready:
			case <-ctx.Done():
			}
			continue
		}
		s.timer.Reset(wait)
		select {
		case <-s.ready:
			s.timer.Stop()
		case <-s.timer.C:
		case <-ctx.Done():
			s.timer.Stop()
		}
	}
}

// Close stops the reader goroutine (see Stdin) and releases the batch it
// was filling. Safe to call more than once.
func (s *stdinSource) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	close(s.done)
	var err error
	if c, ok := s.in.(io.Closer); ok {
		err = c.Close()
	}
	select {
	case <-s.exited:
		s.cur.Release()
		s.cur = nil
	case <-time.After(closeWait):
	}
	return err
}
