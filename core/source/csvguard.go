package source

import (
	"bytes"
	"errors"
	"io"
)

// errOpenQuote is what quoteGuard.Read returns, at a record boundary, in
// place of an unclosed-quote record (csvFrame's unitOpen); encoding/csv
// hands it on from Read with an empty record, and csvReader turns it into
// a malformed record (quoteGuard.bad).
var errOpenQuote = errors.New("unclosed quote")

// guardBufferSize is quoteGuard's read size in bytes (as readBufferSize:
// a block reader's guard reads the file directly); the buffer grows
// (doubling) only to hold a record longer than it.
const guardBufferSize = readBufferSize

// quoteGuard stands between a CSV input and encoding/csv. It frames the
// input with csvFrame and serves encoding/csv whole units only (runs of
// one-line records, a record of several lines), so that encoding/csv never
// reads into a record it does not end; an unclosed-quote record it drops
// instead, returning errOpenQuote from the Read that would have served it,
// and goes on with the line after the one the field opened on. It holds at
// most one undecided unit in memory: a record, or at most maxBytes plus a
// line of an open quoted field.
//
// encoding/csv counts the lines it reads (FieldPos, ParseError) and one
// more for the empty read that returned errOpenQuote; shift corrects them:
// the input's line of a record is encoding/csv's line + shift.
//
// A block reader gives it the file up to its end and stop, the block's
// length: it serves no byte at or past stop (a record boundary by the same
// rule), but may read past it to decide the last unit, as the sequential
// reader would.
//
// Line breaks inside quoted fields: encoding/csv turns the "\r\n" that
// ends each line it reads into "\n", also where the line ends inside a
// quoted field, so a field's CRLF would come out as LF. The CRLF is part
// of the value there (RFC 4180), so the guard serves an extra '\r' before
// each "\r\n" inside a quoted field (every '\n' of a unitRecord but the
// one that ends it): encoding/csv then keeps "\r\n". A bare '\n' inside
// quotes and the CRLF that ends a record are served as they are. The extra
// bytes add no line, so encoding/csv's line numbers are unchanged; its
// offsets (InputOffset) count them (csvReader.start corrects the header's).
type quoteGuard struct {
	f   *csvFrame
	src io.Reader
	buf []byte // buf[r:ok]: decided, not yet served; buf[ok:w]: undecided
	r   int
	ok  int
	w   int
	// base is the input offset of buf[0]; stop the offset served up to
	// (-1: the end of src).
	base, stop int64
	eof        bool  // src has ended
	err        error // src's read error, returned after what was read
	shift      int64
	// crlf[cr:]: the input offsets of the '\r's of the "\r\n"s inside
	// quoted fields in buf[r:ok], in order; Read serves an extra '\r'
	// before each.
	crlf []int64
	cr   int

	// The last unclosed-quote record: its text (at most openRawMax
	// bytes), encoding/csv's shift for its line, the field, and the
	// reason's inputs.
	bad        []byte
	badShift   int64
	badWhy     openWhy
	badLines   int64 // '\n's in the unit before the opening quote
	badAtLines int64 // '\n's in the unit before where it was found open
	badCut     bool  // the text was cut
}

// reset points g at src, a record start; stop as in quoteGuard (-1: none).
func (g *quoteGuard) reset(src io.Reader, stop int64) {
	if g.buf == nil {
		g.buf = make([]byte, guardBufferSize)
	}
	g.src, g.stop = src, stop
	g.r, g.ok, g.w, g.base = 0, 0, 0, 0
	g.eof, g.err, g.shift = false, nil, 0
	g.crlf, g.cr = g.crlf[:0], 0
}

// Read serves decided bytes (io.Reader for encoding/csv's bufio.Reader).
func (g *quoteGuard) Read(p []byte) (int, error) {
	for {
		if g.stop >= 0 && g.base+int64(g.r) >= g.stop {
			return 0, io.EOF
		}
		if g.r < g.ok {
			end := g.ok
			if g.stop >= 0 {
				end = int(min(int64(end), g.stop-g.base))
			}
			if g.cr < len(g.crlf) {
				at := int(g.crlf[g.cr] - g.base)
				if at == g.r && len(p) > 0 {
					// The extra '\r' of a quoted "\r\n"; buf[at] next.
					p[0] = '\r'
					if g.cr++; g.cr == len(g.crlf) {
						g.crlf, g.cr = g.crlf[:0], 0
					}
					return 1, nil
				}
				end = min(end, at)
			}
			n := copy(p, g.buf[g.r:end])
			g.r += n
			return n, nil
		}
		if g.r < g.w {
			// Decide as many units as buf holds, so that encoding/csv
			// reads in large pieces; an unclosed quote is dropped only
			// once everything before it is served.
			for g.ok < g.w {
				n, k, o := g.f.next(g.buf[g.ok:g.w], g.eof)
				if k == unitMore {
					break
				}
				if k == unitOpen {
					if g.ok == g.r {
						g.drop(n, o)
						return 0, errOpenQuote
					}
					break
				}
				if k == unitRecord {
					g.quotedCRLF(g.ok, n)
				}
				g.ok += n
			}
			if g.r < g.ok {
				continue
			}
		} else if g.eof {
			return 0, io.EOF
		}
		if g.err != nil {
			return 0, g.err
		}
		g.fill()
	}
}

// quotedCRLF notes the "\r\n"s inside the quoted fields of the record unit
// buf[at:at+n] (csvFrame.record): every '\n' in it is inside one but a
// last byte '\n', which ends the record. A malformed record (a bad quote
// on its last line) is the same, and only its dead letter shows them.
func (g *quoteGuard) quotedCRLF(at, n int) {
	u := g.buf[at : at+n]
	if u[n-1] == '\n' {
		u = u[:n-1]
	}
	for i := 0; ; {
		j := bytes.Index(u[i:], crlf)
		if j < 0 {
			return
		}
		g.crlf = append(g.crlf, g.base+int64(at+i+j))
		i += j + 2
	}
}

var crlf = []byte("\r\n")

// drop skips the unclosed-quote unit of n bytes at buf[r:], keeping its
// text for the dead letter.
func (g *quoteGuard) drop(n int, o openField) {
	u := g.buf[g.r:g.w]
	text := u[:min(max(o.at, n), len(u))]
	text = bytes.TrimSuffix(text, newline)
	g.badCut = len(text) > openRawMax
	g.bad = append(g.bad[:0], text[:min(len(text), openRawMax)]...)
	g.badWhy = o.why
	// The reason counts lines in the unit up to o.at: keep them countable.
	g.badLines = int64(bytes.Count(u[:o.quote], newline))
	g.badAtLines = int64(bytes.Count(u[:min(o.at, len(u))], newline))
	g.badShift = g.shift
	lines := int64(bytes.Count(u[:n], newline))
	g.shift += lines - 1 // the dropped lines, less the one encoding/csv counts for the failed read
	g.r += n
	g.ok = g.r
}

// fill reads more of src into buf after w, making room first: served bytes
// are dropped, and a full buffer doubles. Before stop it reads no further
// than stop.
func (g *quoteGuard) fill() {
	if g.r > 0 {
		copy(g.buf, g.buf[g.r:g.w])
		g.w -= g.r
		g.ok -= g.r
		g.base += int64(g.r)
		g.r = 0
	}
	if g.w == len(g.buf) {
		nb := make([]byte, 2*len(g.buf))
		copy(nb, g.buf[:g.w])
		g.buf = nb
	}
	lim := len(g.buf)
	if at := g.base + int64(g.w); g.stop >= 0 && at < g.stop {
		lim = int(min(int64(lim), int64(g.w)+g.stop-at))
	}
	n, err := g.src.Read(g.buf[g.w:lim])
	g.w += n
	switch {
	case err == io.EOF:
		g.eof = true
	case err != nil:
		g.err = err
	}
}
