package source

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// JSONFormat is how a JSON input divides into values: the units a record
// (or, under explode, an array of records) is read from.
type JSONFormat int

const (
	// JSONAuto picks the format from the input's first bytes: '[' is
	// JSONArray; a first line that holds exactly one value is JSONLines;
	// anything else JSONValues.
	JSONAuto JSONFormat = iota
	// JSONLines is one value a line (JSON Lines, NDJSON). A '\n' always
	// ends a unit, so a broken line costs itself only.
	JSONLines
	// JSONArray is one top-level array whose elements are the units.
	JSONArray
	// JSONValues is a stream of values separated by optional whitespace
	// (concatenated JSON, pretty-printed documents one after another).
	JSONValues
)

// ParseJSONFormat parses auto, lines, array or values.
func ParseJSONFormat(s string) (JSONFormat, error) {
	switch s {
	case "", "auto":
		return JSONAuto, nil
	case "lines":
		return JSONLines, nil
	case "array":
		return JSONArray, nil
	case "values":
		return JSONValues, nil
	}
	return 0, fmt.Errorf("format %q: expected auto, lines, array or values", s)
}

func (f JSONFormat) String() string {
	return [...]string{"auto", "lines", "array", "values"}[f]
}

// unitScan is the structural scanner that cuts an array file or a stream
// of values into units without parsing them: it follows strings (and their
// escapes) and the depth of brackets, nothing else. The sequential reader
// and the boundary pass of the blocks run the same scanner, so they agree
// on every unit whatever the bytes; the parser then judges each unit.
//
// Units of an array are the bytes from an element's first non-blank byte
// to the ',' or ']' at depth 0 outside strings (a closer that would take
// the depth below 0 is kept in the element, which the parser then
// refuses). Units of a stream of values start at a non-blank byte: one
// starting with '{' or '[' ends after the bracket that brings the depth
// back to 0, one starting with '"' after its closing quote, any other
// (a number, a literal, stray bytes) before the next blank, '{', '[' or
// '"'. A unit left open at the end of the input ends there.
type unitScan struct {
	array bool

	phase      int  // scanBefore, scanBetween, scanIn, scanAfter
	afterComma bool // array, between units: a ',' was the last byte
	inStr, esc bool
	depth      int
	bare       bool // values: the unit is not a bracket or string unit
	strUnit    bool // values: the unit is a string
	stray      int  // under scanStray: the phase the stray bytes came in
}

const (
	scanBefore  = iota // array: before the '['
	scanBetween        // between units
	scanIn             // in a unit
	scanAfter          // array: after the ']'
	scanStray          // array: after bytes where no value may be; to the end
)

// unit events step reports.
const (
	evNone   = iota
	evStart  // a unit starts at the returned index
	evEnd    // the current unit ends before the returned index (exclusive)
	evEmpty  // array: an empty element (",," or ",]") at the returned index
	evStray  // a byte that starts no unit where one is not allowed (returned index)
	evClosed // array: the ']' at the returned index closed the array
)

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// step scans w from i and returns the first event and its index in w, or
// (evNone, len(w)) when w holds none; the caller calls again from the
// index (from index+1 after evEmpty, evStray and evClosed, which consume
// their byte; evStart and evEnd consume nothing).
func (s *unitScan) step(w []byte, i int) (int, int) {
	for i < len(w) {
		c := w[i]
		switch s.phase {
		case scanBefore, scanAfter:
			if isBlank(c) {
				i++
				continue
			}
			if s.phase == scanBefore && c == '[' {
				s.phase = scanBetween
				i++
				continue
			}
			s.stray = s.phase // the rest of the input is one malformed unit
			s.phase = scanStray
			return evStray, i
		case scanStray:
			return evNone, len(w)
		case scanBetween:
			if isBlank(c) {
				i++
				continue
			}
			if s.array {
				if c == ']' {
					if s.afterComma {
						s.afterComma = false
						return evEmpty, i
					}
					s.phase = scanAfter
					return evClosed, i
				}
				if c == ',' {
					s.afterComma = true
					return evEmpty, i
				}
			}
			s.phase = scanIn
			s.inStr, s.esc, s.depth = false, false, 0
			s.bare, s.strUnit = false, false
			if !s.array {
				switch c {
				case '{', '[':
				case '"':
					s.strUnit = true
				default:
					s.bare = true
				}
			}
			return evStart, i
		case scanIn:
			if s.inStr {
				if s.esc { // the byte after a backslash
					s.esc = false
					i++
					continue
				}
				j := i // jump to the next quote or backslash
				for j < len(w) && w[j] != '"' && w[j] != '\\' {
					j++
				}
				if j == len(w) {
					return evNone, j
				}
				if w[j] == '\\' {
					s.esc = true
					i = j + 1
					continue
				}
				s.inStr = false
				i = j + 1
				if s.strUnit {
					s.phase = scanBetween
					return evEnd, i
				}
				continue
			}
			if s.bare {
				if isBlank(c) || c == '{' || c == '[' || c == '"' {
					s.phase = scanBetween
					return evEnd, i
				}
				i++
				continue
			}
			switch c {
			case '"':
				s.inStr = true
			case '{', '[':
				s.depth++
			case '}', ']':
				if s.array && s.depth == 0 {
					if c == ']' {
						s.phase = scanBetween
						s.afterComma = false
						return evEnd, i
					}
				} else if s.depth > 0 {
					s.depth--
					if !s.array && s.depth == 0 {
						s.phase = scanBetween
						return evEnd, i + 1
					}
				}
			case ',':
				if s.array && s.depth == 0 {
					s.phase = scanBetween
					s.afterComma = true
					return evEnd, i + 1 // the ',' is consumed with the unit's end
				}
			}
			i++
		}
	}
	return evNone, i
}

// indexUnits is the boundary pass of an array file or a stream of values:
// the blocks of the units in f between offsets area (on line line) and
// end, of size bytes: block b holds the units that start in [area+b·size,
// area+(b+1)·size) (block 0 also what comes before its first unit). It
// runs unitScan over the file, so the blocks are the sequential reader's
// units. A block other than the first starts at a unit's first byte, in
// the state "between units, after a ','" (array) or "between units"
// (values), which is what a block reader starts in.
func indexUnits(f *os.File, area, line, end, size int64, array bool) (*textIndex, error) {
	if size <= 0 {
		return nil, fmt.Errorf("block size %d", size)
	}
	blocks := 0
	if n := end - area; n > 0 {
		blocks = int((n + size - 1) / size)
	}
	x := &textIndex{starts: make([]int64, 0, blocks+1), lines: make([]int64, 0, blocks+1)}
	mark := func(p, l int64) {
		for len(x.starts) < blocks && area+int64(len(x.starts))*size <= p {
			x.starts = append(x.starts, p)
			x.lines = append(x.lines, l)
		}
	}
	if blocks > 0 {
		mark(area, line)
	}
	s := &unitScan{array: array}
	if !array {
		s.phase = scanBetween
	}
	buf := make([]byte, min(windowSize, max(end-area, 1)))
	for base := area; base < end && len(x.starts) < blocks; {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), end-base)], base)
		if n == 0 {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF // the file shrank
			}
			return nil, err
		}
		w := buf[:n]
		counted := 0 // '\n's are counted in w before this index
		for i := 0; i < len(w); {
			ev, at := s.step(w, i)
			if ev == evNone {
				break
			}
			if ev == evStart {
				p := base + int64(at)
				if len(x.starts) < blocks && area+int64(len(x.starts))*size <= p {
					line += int64(bytes.Count(w[counted:at], newline))
					counted = at
					mark(p, line)
				}
			}
			i = at
			if ev == evStray || ev == evClosed || ev == evEmpty && w[at] == ',' {
				i = at + 1
			}
		}
		line += int64(bytes.Count(w[counted:], newline))
		base += int64(n)
	}
	mark(end, line) // the blocks no unit starts in; line is not used there
	for len(x.starts) < blocks {
		x.starts = append(x.starts, end)
		x.lines = append(x.lines, line)
	}
	x.starts = append(x.starts, end)
	x.lines = append(x.lines, line)
	return x, nil
}
