package source

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
)

// splitSize is the size of the blocks a CSV or JSON-lines file is read in
// by source workers (core.Splittable), in bytes of the record area: block
// b holds the records that start in [b·splitSize, (b+1)·splitSize). It is
// a constant, so blocks depend on the input alone.
//
// Why 1 MiB: a block costs the runtime a few µs (a block-end marker per
// channel, the checkpoint check under a lock, a fresh encoding/csv
// Reader), against 5–10 ms of parsing at 100–200 MB/s, so larger blocks
// gain nothing measurable; smaller ones let more workers share a small
// file (a 10 MB file is 10 blocks) and keep the round-robin dealing even
// when records cost unevenly, and a checkpoint waits for at most one
// block per worker. Measured: docs/PERFORMANCE.md (2026-12-01).
const splitSize = 1 << 20

// textIndex is where the blocks of a text file start: block b is the
// bytes [starts[b], starts[b+1]), whose first line is lines[b] (1-based,
// as error messages name lines). Both have Blocks()+1 entries; the last
// start is the end of the file. Consecutive starts are equal where a
// record longer than a block spans a whole block: that block is empty.
type textIndex struct {
	starts, lines []int64
}

func (x *textIndex) blocks() int { return len(x.starts) - 1 }

// indexScan is the one serial pass that finds the blocks of a text file:
// a CSV file (quotes: a '\n' inside a quoted field ends no record) or a
// JSON-lines one (every '\n' ends a line). It reads the file through a
// window and keeps to SIMD scans (bytes.IndexByte, bytes.Count): per '"'
// a few compares, per block one search for the first record start past
// its threshold, and the '\n's counted for line numbers.
//
// For CSV, a quote is trusted only where RFC 4180 puts one: opening at a
// field's start (at the record's line start or right after the
// delimiter), doubled inside a quoted field, closing right before the
// delimiter, a line end or the end of the file. Where encoding/csv then
// parses, a '\n' ends a record exactly when it is outside quotes, so the
// pass and the sequential reader agree. Any other quote (a bare quote, text
// after a closing quote, a field left open at the end of the file) makes
// the record malformed; the pass then asks encoding/csv itself where that
// record ends (one Read from the record's start, as the sequential reader
// does it) and goes on from there. So malformed quoting shifts no later
// boundary, and the blocks are the sequential reader's records whatever
// the quoting.
type indexScan struct {
	f      *os.File
	area   int64 // the record area: [area, end)
	end    int64
	size   int64 // the block size
	quotes bool  // CSV: track quoted fields
	comma  rune
	delim  []byte // comma in UTF-8

	buf  []byte // the file from base
	base int64
	eof  bool // buf reaches end

	counted int64 // '\n's are counted before this offset
	line    int64 // the line at counted
	blocks  int
	x       textIndex
}

// windowSize is the pass's read size; lookback is the bytes before the
// scan position a window keeps (a delimiter of up to 4 bytes before a
// quote).
const (
	windowSize = 1 << 20
	lookback   = 4
)

// indexCSV finds the blocks of the CSV records in f between offsets area
// (on line line) and end, blocks of size bytes, comma the delimiter.
func indexCSV(f *os.File, area, line, end int64, comma rune, size int64) (*textIndex, error) {
	sc := &indexScan{f: f, area: area, end: end, size: size, quotes: true, comma: comma, delim: []byte(string(comma))}
	return sc.run(line)
}

// indexLines finds the blocks of the lines in f between offsets area (on
// line line) and end, blocks of size bytes.
func indexLines(f *os.File, area, line, end int64, size int64) (*textIndex, error) {
	sc := &indexScan{f: f, area: area, end: end, size: size}
	return sc.run(line)
}

func (sc *indexScan) run(line int64) (*textIndex, error) {
	if sc.size <= 0 {
		return nil, fmt.Errorf("block size %d", sc.size)
	}
	sc.counted, sc.line = sc.area, line
	if n := sc.end - sc.area; n > 0 {
		sc.blocks = int((n + sc.size - 1) / sc.size)
	}
	sc.x.starts = make([]int64, 0, sc.blocks+1)
	sc.x.lines = make([]int64, 0, sc.blocks+1)
	sc.buf = make([]byte, 0, windowSize)
	if err := sc.scan(); err != nil {
		return nil, err
	}
	if err := sc.mark(sc.end); err != nil { // the blocks no record starts in, and the end
		return nil, err
	}
	sc.x.starts = append(sc.x.starts, sc.end)
	sc.x.lines = append(sc.x.lines, sc.line)
	return &sc.x, nil
}

// scan walks the record area, marking record starts.
func (sc *indexScan) scan() error {
	pos, rs := sc.area, sc.area // scan position; the start of the current record's line
	inq := false
	if pos >= sc.end {
		return nil
	}
	if err := sc.mark(pos); err != nil {
		return err
	}
	if err := sc.load(pos); err != nil {
		return err
	}
	for pos < sc.end {
		top := sc.base + int64(len(sc.buf))
		if pos >= top { // the window is used up
			if err := sc.load(pos); err != nil {
				return err
			}
			continue
		}
		w := sc.buf[pos-sc.base:]
		if !inq {
			q := -1
			if sc.quotes {
				q = bytes.IndexByte(w, '"')
			}
			se := top // the segment [pos, se) holds no quote
			if q >= 0 {
				se = pos + int64(q)
			}
			if err := sc.lines(pos, se); err != nil {
				return err
			}
			if i := bytes.LastIndexByte(sc.buf[pos-sc.base:se-sc.base], '\n'); i >= 0 {
				rs = pos + int64(i) + 1
			}
			if q < 0 {
				pos = top
				continue
			}
			// An opening quote must start a field.
			d := int64(len(sc.delim))
			if se == rs || se-d >= rs && bytes.Equal(sc.buf[se-d-sc.base:se-sc.base], sc.delim) {
				inq, pos = true, se+1
				continue
			}
		} else {
			q := bytes.IndexByte(w, '"')
			if q < 0 {
				if sc.eof { // a quoted field left open at the end
					return sc.malformed(rs)
				}
				pos = top
				continue
			}
			qa := pos + int64(q)
			if qa+lookback >= top && !sc.eof { // read on: the bytes after the quote decide
				if err := sc.load(qa); err != nil {
					return err
				}
				pos = qa
				continue
			}
			next := func(i int64) int { // the byte at qa+i, -1 past the end
				if qa+i >= sc.end {
					return -1
				}
				return int(sc.buf[qa+i-sc.base])
			}
			c := next(1)
			if c == '"' { // an escaped quote
				pos = qa + 2
				continue
			}
			after := sc.buf[qa+1-sc.base:]
			if c == -1 || c == '\n' || c == '\r' && (next(2) == -1 || next(2) == '\n') || bytes.HasPrefix(after, sc.delim) {
				inq, pos = false, qa+1
				continue
			}
		}
		// A quote RFC 4180 does not allow: the record is malformed.
		if err := sc.malformed(rs); err != nil {
			return err
		}
		pos, rs, inq = sc.counted, sc.counted, false
		if pos < sc.end {
			if err := sc.load(pos); err != nil {
				return err
			}
		}
	}
	if inq { // an escaped quote last: the field is open at the end
		return sc.malformed(rs)
	}
	return nil
}

// lines marks the record starts after the '\n's in [from, to) (in the
// window, outside quotes) that are the first past a block's threshold.
func (sc *indexScan) lines(from, to int64) error {
	for len(sc.x.starts) < sc.blocks {
		thr := sc.area + int64(len(sc.x.starts))*sc.size
		at := max(thr-1, from) // a start ≥ thr follows a '\n' at ≥ thr-1
		if at >= to {
			return nil
		}
		i := bytes.IndexByte(sc.buf[at-sc.base:to-sc.base], '\n')
		if i < 0 {
			return nil
		}
		if err := sc.mark(at + int64(i) + 1); err != nil {
			return err
		}
	}
	return nil
}

// malformed finds where the record whose line starts at rs ends, by
// reading it with encoding/csv as the sequential reader would, marks that
// point as a record start and leaves counted there.
func (sc *indexScan) malformed(rs int64) error {
	r := newRawCSV(bufio.NewReaderSize(io.NewSectionReader(sc.f, rs, sc.end-rs), 64<<10), sc.comma)
	_, err := r.Read()
	var pe *csv.ParseError
	if err != nil && err != io.EOF && !errors.As(err, &pe) {
		return err
	}
	e := rs + r.InputOffset()
	if e <= rs { // cannot happen: the record holds a quote
		return fmt.Errorf("record at offset %d: no progress", rs)
	}
	if err := sc.countTo(e); err != nil {
		return err
	}
	return sc.mark(e)
}

// mark notes that a record starts at p (p = end: no record starts after
// the last one): it starts every block whose threshold is ≤ p and has no
// start yet.
func (sc *indexScan) mark(p int64) error {
	for len(sc.x.starts) < sc.blocks && sc.area+int64(len(sc.x.starts))*sc.size <= p {
		if err := sc.countTo(p); err != nil {
			return err
		}
		sc.x.starts = append(sc.x.starts, p)
		sc.x.lines = append(sc.x.lines, sc.line)
	}
	return sc.countTo(p)
}

// countTo counts the '\n's up to p, from the window where it holds them,
// else from the file.
func (sc *indexScan) countTo(p int64) error {
	if p <= sc.counted {
		return nil
	}
	if sc.counted >= sc.base && p <= sc.base+int64(len(sc.buf)) {
		sc.line += int64(bytes.Count(sc.buf[sc.counted-sc.base:p-sc.base], newline))
		sc.counted = p
		return nil
	}
	n, err := countNewlines(sc.f, sc.counted, p)
	if err != nil {
		return err
	}
	sc.line += n
	sc.counted = p
	return nil
}

// load counts the '\n's the window holds up to at, then reads the file
// from at (less the lookback) into it.
func (sc *indexScan) load(at int64) error {
	if err := sc.countTo(min(at, sc.base+int64(len(sc.buf)))); err != nil {
		return err
	}
	from := at - min(lookback, at-sc.area)
	want := min(int64(cap(sc.buf)), sc.end-from)
	n, err := sc.f.ReadAt(sc.buf[:want], from)
	if int64(n) < want {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF // the file shrank
		}
		return err
	}
	sc.buf, sc.base, sc.eof = sc.buf[:n], from, from+int64(n) >= sc.end
	return nil
}

// countNewlines counts the '\n's of f in [from, to).
func countNewlines(f *os.File, from, to int64) (int64, error) {
	var lines int64
	buf := make([]byte, min(to-from, 64<<10))
	for at := from; at < to; {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), to-at)], at)
		lines += int64(bytes.Count(buf[:n], newline))
		at += int64(n)
		if err != nil && at < to {
			return 0, err
		}
	}
	return lines, nil
}
