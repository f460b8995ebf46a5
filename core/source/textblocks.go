package source

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"

	"streamd/core"
)

// blockReader is a recordReader that can be pointed at a block: a CSV or
// JSONL reader of a file's columns, with interners of its own.
type blockReader interface {
	recordReader
	// reset makes the reader read in, which starts at a record boundary
	// on line line0+1, reporting malformed records to errs.
	reset(in *bufio.Reader, line0 int64, errs *core.ErrorPolicy)
}

// blockText is a CSV or JSON-lines file read by blocks of bytes
// (core.Splittable): block b is the records that start in the bytes
// [b·size, (b+1)·size) of the record area, found once at open by the
// serial pass of textIndex. Each block is parsed as a file of its own by
// a fresh reader that knows the block's first line, so its records, Pos
// and malformed records are those the sequential reader meets there.
//
// Next reads the blocks in turn with the reader that read the header; its
// batches end at block ends (the promise of core.Splittable), so they are
// ReadBlock's. ReadBlock takes a reader from a free list (made on demand
// with interners of its own: one per concurrent reader, kept for its
// next block) and reads the block through an io.SectionReader.
type blockText struct {
	kind   string // "csv", "jsonl": in errors
	input  string
	schema *core.Schema
	f      *os.File
	x      *textIndex
	errs   *core.ErrorPolicy // the source's own
	fresh  func() blockReader
	// ahead: the reader may read past a block's end to decide where its
	// last record ends (CSV: an unclosed quote is known only by what
	// follows it), and serves nothing past it.
	ahead bool

	mu   sync.Mutex
	free []*blockCursor

	// Next's state.
	own    *blockCursor
	b      int  // the block Next reads
	open   bool // own reads block b
	closed bool
}

// blockCursor is a reader with its read buffer.
type blockCursor struct {
	rr blockReader
	br *bufio.Reader
}

func newBlockText(kind, input string, f *os.File, x *textIndex, own blockReader, errs *core.ErrorPolicy, schema *core.Schema, fresh func() blockReader) *blockText {
	return &blockText{kind: kind, input: input, schema: schema, f: f, x: x, errs: policy(errs), fresh: fresh,
		own: &blockCursor{rr: own, br: bufio.NewReaderSize(nil, readBufferSize)}}
}

func (s *blockText) Schema() *core.Schema { return s.schema }

// Blocks is the number of blocks (core.Splittable): ⌈record area / block
// size⌉, 0 for a file without records. Some may be empty (a record longer
// than a block).
func (s *blockText) Blocks() int { return s.x.blocks() }

// point makes c read the bytes [from, to) of the file, whose first line is
// line.
func (s *blockText) point(c *blockCursor, from, to, line int64, errs *core.ErrorPolicy) {
	if sp, ok := c.rr.(interface{ span(from, to int64) }); ok {
		sp.span(from, to)
	}
	if cr, ok := c.rr.(*csvReader); ok && s.ahead {
		// The guard buffers the file itself: no bufio.Reader between.
		end := s.x.starts[s.x.blocks()]
		cr.attach(io.NewSectionReader(s.f, from, end-from), to-from)
		cr.line0, cr.errs = line-1, errs
		return
	}
	c.br.Reset(io.NewSectionReader(s.f, from, to-from))
	c.rr.reset(c.br, line-1, errs)
}

// Next returns the next batch of up to core.BatchSize records, owned by the
// caller, or (nil, io.EOF) after the last one. Batches are full but at a
// block's end (the last batch of each block may be shorter). Malformed
// records go to the source's ErrorPolicy; under Fail Next returns its
// *core.RecordError and drops the records before it in the batch, since
// the job stops.
func (s *blockText) Next(ctx context.Context) (*core.Batch, error) {
	for {
		b, _, err := s.next(ctx)
		if err != nil || b != nil {
			return b, err
		}
	}
}

// next is Next that also says whether the batch is its block's last, and
// may return no batch (nil, true, nil) at a block's end.
func (s *blockText) next(ctx context.Context) (*core.Batch, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if s.closed {
		return nil, false, errClosed
	}
	if !s.open {
		if s.b >= s.x.blocks() {
			return nil, false, io.EOF
		}
		s.point(s.own, s.x.starts[s.b], s.x.starts[s.b+1], s.x.lines[s.b], s.errs)
		s.open = true
	}
	b, eof, err := fillBatch(s.own.rr, s.schema)
	if eof {
		s.open = false
		s.b++
	}
	if err != nil {
		return nil, false, err
	}
	return b, eof, nil
}

// seek makes Next read on from offset off, a record boundary on line line
// (the parallel parser's fall-back after a quoting error).
func (s *blockText) seek(off, line int64) {
	n := s.x.blocks()
	// The block holding off: the last whose start is ≤ off.
	b := sort.Search(n, func(b int) bool { return s.x.starts[b] > off }) - 1
	if b < 0 || off >= s.x.starts[n] {
		s.b, s.open = n, false
		return
	}
	s.b, s.open = b, true
	s.point(s.own, off, s.x.starts[b+1], line, s.errs)
}

// ReadBlock reads block b with a reader of its own (core.Splittable) and
// hands its batches to emit, which owns them: the batches Next returns for
// the block. Malformed records go to errs (nil: the source's policy).
// Concurrent calls for different blocks are safe.
func (s *blockText) ReadBlock(ctx context.Context, b int, errs *core.ErrorPolicy, emit func(*core.Batch) error) error {
	if b < 0 || b >= s.x.blocks() {
		return fmt.Errorf("%s source %s: no block %d (%d in the file)", s.kind, s.input, b, s.x.blocks())
	}
	if errs == nil {
		errs = s.errs
	}
	c := s.cursor()
	defer s.put(c)
	s.point(c, s.x.starts[b], s.x.starts[b+1], s.x.lines[b], errs)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		bt, eof, err := fillBatch(c.rr, s.schema)
		if err != nil {
			return err
		}
		if bt != nil {
			if err := emit(bt); err != nil {
				return err
			}
		}
		if eof {
			return nil
		}
	}
}

func (s *blockText) cursor() *blockCursor {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.free); n > 0 {
		c := s.free[n-1]
		s.free = s.free[:n-1]
		return c
	}
	return &blockCursor{rr: s.fresh(), br: bufio.NewReaderSize(nil, readBufferSize)}
}

func (s *blockText) put(c *blockCursor) {
	c.br.Reset(nil) // drop the section reader
	s.mu.Lock()
	s.free = append(s.free, c)
	s.mu.Unlock()
}

// Close closes the file. Safe to call more than once; Next then returns
// errClosed. Call it after every ReadBlock has returned.
func (s *blockText) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	return s.f.Close()
}

// fillBatch reads up to core.BatchSize records of rr into a new batch. It
// returns the batch (nil if no record was read), whether rr is at its end,
// and rr's error (the batch is then dropped).
func fillBatch(rr recordReader, schema *core.Schema) (*core.Batch, bool, error) {
	b := core.NewBatch(schema)
	for !b.Full() {
		row := b.Append(0, 0, core.NoTime, 0)
		line, err := rr.read(row)
		if err != nil {
			b.Truncate(b.Len - 1)
			if err != io.EOF {
				b.Release()
				return nil, false, err
			}
			if b.Len == 0 {
				b.Release()
				return nil, true, nil
			}
			return b, true, nil
		}
		b.Pos[b.Len-1] = line
	}
	return b, false, nil
}
