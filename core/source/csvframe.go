package source

import (
	"bytes"
	"errors"
	"fmt"
)

// ErrUnclosedQuote is the reason (errors.Is) of a malformed CSV record
// whose quoted field spans a line end and is never properly closed: it runs
// past the source's max_quoted_lines or max_quoted_bytes, meets a quote
// that closes nothing (one followed by neither a delimiter, a line end, nor
// another quote), or is still open at the end of the input. Such a record
// is reported on the line it starts on, and reading resumes on the line
// after the one the field opened on, so the one bad quote costs one record,
// not the rest of the file.
var ErrUnclosedQuote = errors.New("unclosed quote")

// Default limits of a quoted field that spans lines (CSVOptions).
const (
	// DefaultMaxQuotedLines is the most lines one quoted field may span.
	DefaultMaxQuotedLines = 10_000
	// DefaultMaxQuotedBytes is the most bytes, from its opening quote to a
	// line end inside it, a quoted field may hold.
	DefaultMaxQuotedBytes = 1 << 20
	// openRawMax bounds the text of an unclosed-quote record kept for its
	// dead letter, in bytes.
	openRawMax = 4 << 10
)

// csvFrame finds where the records of a CSV input end, by the rule both
// the reader (quoteGuard, in front of encoding/csv) and the serial block
// pass (textIndex) follow, so that they agree on every record boundary
// whatever the quoting:
//
//   - A record starts at a line start. Its quotes are read as
//     encoding/csv reads them (RFC 4180): a quote at a field's start
//     (the record's first byte, or right after the delimiter) opens a quoted
//     field; inside one, "" is a quote, and a quote followed by the
//     delimiter, a line end ("\n", "\r\n") or the end of the input closes
//     it. Any other quote is malformed, and the record ends with the line
//     it is on (encoding/csv drops the rest of that line).
//   - A record ends at the first '\n' outside a quoted field.
//   - A quoted field that holds a '\n' must close properly: when it holds
//     maxLines '\n's, or a '\n' more than maxBytes bytes after its opening
//     quote, or meets a malformed quote, or is open at the end of the
//     input, the record is an unclosed-quote record (unitOpen): malformed,
//     and the next record starts on the line after the one the field
//     opened on.
//
// Fast path: a line that starts a record and holds an even number of
// quotes ends the record (an open quoted field at its end would need an odd
// count; a malformed quote ends the record at that line anyway), so runs
// of such lines cost a bytes.IndexByte for quotes and, on lines that hold
// some, a bytes.Count. Only a line with an odd count is walked quote by
// quote.
type csvFrame struct {
	delim    []byte // the delimiter in UTF-8
	maxLines int    // > 0
	maxBytes int    // > 0
}

func newCSVFrame(comma rune, maxLines int, maxBytes int64) csvFrame {
	if maxLines <= 0 {
		maxLines = DefaultMaxQuotedLines
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxQuotedBytes
	}
	return csvFrame{delim: []byte(string(comma)), maxLines: maxLines, maxBytes: int(min(maxBytes, 1<<50))}
}

// unitKind is what csvFrame.next found at the start of its input.
type unitKind uint8

const (
	unitMore   unitKind = iota // undecided: give more bytes (or say eof)
	unitLines                  // whole lines, each ending its record (or empty)
	unitRecord                 // one record over several lines (well-formed or not)
	unitOpen                   // an unclosed-quote record: malformed, skip it
)

// openWhy says how an unclosed quote was found.
type openWhy uint8

const (
	openLines openWhy = iota // maxLines reached
	openBytes                // maxBytes passed
	openStray                // a malformed quote inside it
	openEOF                  // the input ended
)

// openField describes the quoted field of a unitOpen, by offsets in the
// unit: its opening quote and where it was found open (the '\n' past a
// limit, the stray quote, or the end of the input).
type openField struct {
	quote, at int
	why       openWhy
}

// next looks at b, which starts at a record start, and returns the unit it
// begins with and its length in bytes: unitLines (one or more records,
// every '\n' in b[:n] ending one), unitRecord (one record of several
// lines), unitOpen (a record with an unclosed quoted field, described by
// o; b[n:] starts on the line after the field's opening line), or unitMore
// (n = 0: b ends before the unit is decided; never when eof). eof says b
// ends where the input does. b must not be empty.
func (f *csvFrame) next(b []byte, eof bool) (n int, k unitKind, o openField) {
	pos := 0 // a record start; every line before it ended its record
	for {
		q := bytes.IndexByte(b[pos:], '"')
		if q < 0 {
			if eof {
				return len(b), unitLines, o
			}
			if e := bytes.LastIndexByte(b[pos:], '\n'); e >= 0 {
				return pos + e + 1, unitLines, o
			}
			if pos > 0 {
				return pos, unitLines, o
			}
			return 0, unitMore, o
		}
		q += pos
		ls := pos // the start of q's line
		if i := bytes.LastIndexByte(b[pos:q], '\n'); i >= 0 {
			ls = pos + i + 1
		}
		le := len(b) // the end of q's line, after its '\n'
		if i := bytes.IndexByte(b[q:], '\n'); i >= 0 {
			le = q + i + 1
		} else if !eof {
			if ls > 0 {
				return ls, unitLines, o
			}
			return 0, unitMore, o
		}
		if bytes.Count(b[q:le], quote)%2 == 0 {
			if pos = le; pos == len(b) {
				return pos, unitLines, o
			}
			continue
		}
		if ls > 0 {
			return ls, unitLines, o
		}
		return f.record(b, eof)
	}
}

// record walks the record at b's start quote by quote (next's slow path).
func (f *csvFrame) record(b []byte, eof bool) (int, unitKind, openField) {
	d := f.delim
	i := 0 // a field start, outside quotes
	for {
		q := bytes.IndexByte(b[i:], '"')
		nl := bytes.IndexByte(b[i:], '\n')
		if nl >= 0 && (q < 0 || nl < q) {
			return i + nl + 1, unitRecord, openField{}
		}
		if q < 0 {
			if eof {
				return len(b), unitRecord, openField{}
			}
			return 0, unitMore, openField{}
		}
		q += i
		if q != i && (q-len(d) < i || !bytes.Equal(b[q-len(d):q], d)) {
			return lineEnd(b, q, eof) // a bare quote in an unquoted field
		}
		// A quoted field opens at q.
		p, lines := q+1, 0
		for {
			end := len(b) // the next quote, or the end of b
			c := bytes.IndexByte(b[p:], '"')
			if c >= 0 {
				end = p + c
			}
			for { // the '\n's before it are inside the field
				j := bytes.IndexByte(b[p:end], '\n')
				if j < 0 {
					break
				}
				at := p + j
				lines++
				switch {
				case lines >= f.maxLines:
					return f.open(b, q, at, openLines)
				case at+1-q > f.maxBytes:
					return f.open(b, q, at, openBytes)
				}
				p = at + 1
			}
			if c < 0 {
				switch {
				case !eof:
					return 0, unitMore, openField{}
				case lines > 0:
					return f.open(b, q, len(b), openEOF)
				}
				return len(b), unitRecord, openField{} // encoding/csv: a quote error at the end
			}
			// The quote at end: what follows decides.
			x := end + 1
			if x == len(b) {
				if !eof {
					return 0, unitMore, openField{}
				}
				return len(b), unitRecord, openField{} // closed by the end of the input
			}
			switch c := b[x]; {
			case c == '"': // an escaped quote
				p = x + 1
				continue
			case c == '\n':
				return x + 1, unitRecord, openField{}
			case c == '\r' && x+1 == len(b):
				if !eof {
					return 0, unitMore, openField{}
				}
				return len(b), unitRecord, openField{} // encoding/csv drops a '\r' before the end
			case c == '\r' && b[x+1] == '\n':
				return x + 2, unitRecord, openField{}
			case bytes.HasPrefix(b[x:], d):
				i = x + len(d)
			case !eof && len(b)-x < len(d) && bytes.HasPrefix(d, b[x:]):
				return 0, unitMore, openField{}
			case lines > 0:
				return f.open(b, q, end, openStray)
			default:
				return lineEnd(b, end, eof) // a quote error on the field's own line
			}
			break
		}
	}
}

// open returns the unitOpen of the quoted field opened at q of b and found
// open at at: it ends after the '\n' that ends q's line (there is one: the
// field holds a '\n').
func (f *csvFrame) open(b []byte, q, at int, why openWhy) (int, unitKind, openField) {
	return q + bytes.IndexByte(b[q:], '\n') + 1, unitOpen, openField{quote: q, at: at, why: why}
}

// lineEnd returns the unitRecord that ends with the line holding b[from].
func lineEnd(b []byte, from int, eof bool) (int, unitKind, openField) {
	if i := bytes.IndexByte(b[from:], '\n'); i >= 0 {
		return from + i + 1, unitRecord, openField{}
	}
	if eof {
		return len(b), unitRecord, openField{}
	}
	return 0, unitMore, openField{}
}

// openReason is the reason of an unclosed-quote record that starts on
// line line (1-based, of the input), whose field (openField.why) opened
// openedRel lines and was found open atRel lines after it; cut says its
// text in the dead letter was cut to openRawMax bytes.
func (f *csvFrame) openReason(line, openedRel, atRel int64, why openWhy, cut bool) error {
	opened := line + openedRel
	var how string
	switch why {
	case openLines:
		how = fmt.Sprintf("spans more than %d lines (max_quoted_lines)", f.maxLines)
	case openBytes:
		how = fmt.Sprintf("holds more than %d bytes (max_quoted_bytes)", f.maxBytes)
	case openStray:
		how = fmt.Sprintf("meets a quote on line %d that closes no field", line+atRel)
	default:
		how = "is still open at the end of the input"
	}
	note := ""
	if cut {
		note = fmt.Sprintf(" (record text cut to its first %d bytes)", openRawMax)
	}
	return fmt.Errorf("%w: the quoted field opened on line %d %s; reading resumes on line %d%s", ErrUnclosedQuote, opened, how, opened+1, note)
}
