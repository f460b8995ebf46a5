package source

import (
	"bytes"
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
// block per worker. Measured: docs/PERFORMANCE-LOG.md, "CSV and JSON-lines
// blocks".
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
// a CSV file (records framed by csvFrame) or a JSON-lines one (every '\n'
// ends a line). It reads the file through a window and keeps to SIMD scans
// (bytes.IndexByte, bytes.Count): per line that holds quotes a count of
// them, per block one search for the first record start past its
// threshold, and the '\n's counted for line numbers.
//
// For CSV the pass asks csvFrame, unit by unit, where records end: the
// same function the reader's quoteGuard asks, on the same bytes from the
// same record starts, so the pass and the sequential reader agree on every
// record boundary, malformed quoting and unclosed quotes included (an
// unclosed quote ends its record after the line it opened on, so it shifts
// no later boundary). A unit longer than the window (a long record, an
// open quoted field up to its limit) is read again from its start in a
// window twice as large.
type indexScan struct {
	f     *os.File
	area  int64 // the record area: [area, end)
	end   int64
	size  int64     // the block size
	frame *csvFrame // CSV: the record rule; nil for JSON lines

	buf  []byte // the file from base
	base int64
	eof  bool // buf reaches end

	counted int64 // '\n's are counted before this offset
	line    int64 // the line at counted
	blocks  int
	x       textIndex
}

// windowSize is the pass's read size.
const windowSize = 1 << 20

// indexCSV finds the blocks of the CSV records in f between offsets area
// (on line line) and end, blocks of size bytes, records framed by fr.
func indexCSV(f *os.File, area, line, end int64, fr *csvFrame, size int64) (*textIndex, error) {
	sc := &indexScan{f: f, area: area, end: end, size: size, frame: fr}
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

// scan walks the record area unit by unit, marking record starts.
func (sc *indexScan) scan() error {
	pos := sc.area // a record start
	if pos >= sc.end {
		return nil
	}
	if err := sc.mark(pos); err != nil {
		return err
	}
	for pos < sc.end {
		top := sc.base + int64(len(sc.buf))
		if pos < sc.base || pos >= top {
			if err := sc.load(pos); err != nil {
				return err
			}
			continue
		}
		b := sc.buf[pos-sc.base:]
		n, k := len(b), unitLines // JSON lines: every '\n' ends a record
		if sc.frame != nil {
			n, k, _ = sc.frame.next(b, sc.eof)
		}
		switch k {
		case unitMore: // the unit goes on past the window
			if sc.base == pos { // and fills it from its start
				sc.buf = make([]byte, 0, 2*cap(sc.buf))
			}
			if err := sc.load(pos); err != nil {
				return err
			}
			continue
		case unitLines:
			if err := sc.lines(pos, pos+int64(n)); err != nil {
				return err
			}
		default: // one record, or an unclosed quote's: the next starts after it
			if p := pos + int64(n); len(sc.x.starts) < sc.blocks && p >= sc.area+int64(len(sc.x.starts))*sc.size {
				if err := sc.mark(p); err != nil {
					return err
				}
			}
		}
		pos += int64(n)
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
// from at into it.
func (sc *indexScan) load(at int64) error {
	if err := sc.countTo(min(at, sc.base+int64(len(sc.buf)))); err != nil {
		return err
	}
	from := at
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
