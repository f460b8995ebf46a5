package source

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"streamd/core"
	"streamd/core/internal/bom"
	"streamd/core/timeparse"
)

// JSONL returns a source of JSON Lines: one JSON object per line, read from
// reader if it is set (path then only names the input in errors; the source
// does not close reader) or else from the file at path. fields are the
// record's fields, looked up by name in each object; other members are
// ignored, and a member given twice counts as its last value.
//
// Values: Int64 takes a JSON number that is integral (1e3 is 1000; 1.5 is
// malformed); Float64 any number; String a string; Bool true or false;
// Timestamp a string or a number read by the field's format in times
// (timeparse.Default when absent: an RFC 3339 string or another form
// core.ParseTime accepts, or an integer number of ns since the epoch; with
// a unit, a number of that unit, fraction allowed).
//
// Malformed, and so handed to errs (nil: Fail) with input:line, are: a line
// that is not one valid JSON object, a field that is missing or null (core
// has no null, and a silent zero would corrupt sums and keys), and a value
// of the wrong type. Blank lines are skipped (and counted for line
// numbers); a UTF-8 byte order mark at the start of the input is dropped. The steady path allocates nothing per record: the line is
// parsed in place and strings of up to 64 Ki distinct values per field are
// interned.
//
// A regular file is read by blocks (core.Splittable), so that several
// source workers can parse it: block b is the lines that start in bytes
// [b·1 MiB, (b+1)·1 MiB) of the file (after a byte order mark). A '\n'
// always ends a line (JSON strings escape newlines), so a block starts
// after the first '\n' at or past its first byte; JSONL counts the '\n's
// once at open (one SIMD pass, see docs/PERFORMANCE.md), so each block
// knows its first line. A reader given in place of the file (stdin) is
// read with Next only (Blocks is then not offered).
func JSONL(path string, fields []core.Field, times TimeFormats, reader io.Reader, errs *core.ErrorPolicy) (core.Source, error) {
	return jsonlSource(path, fields, times, reader, errs, splitSize)
}

// jsonlSource is JSONL with the block size in bytes (tests make it small).
func jsonlSource(path string, fields []core.Field, times TimeFormats, reader io.Reader, errs *core.ErrorPolicy, size int64) (core.Source, error) {
	name, in, closer, err := openInput("jsonl", path, reader)
	if err != nil {
		return nil, err
	}
	r, err := newJSONLReader(name, in, fields, times, errs)
	if err != nil {
		if closer != nil {
			closer.Close()
		}
		return nil, err
	}
	if f, ok := closer.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			x, err := jsonlIndex(f, st.Size(), size)
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("jsonl source %s: %w", name, err)
			}
			return newBlockText("jsonl", name, f, x, r, errs, r.schema, func() blockReader { return r.clone() }), nil
		}
	}
	return &textSource{schema: r.schema, rr: r, closer: closer}, nil
}

// jsonlIndex finds the blocks of a JSON-lines file of the given size: its
// lines start after the byte order mark, if any, on line 1.
func jsonlIndex(f *os.File, end, size int64) (*textIndex, error) {
	mark, err := bom.At(f)
	if err != nil {
		return nil, err
	}
	return indexLines(f, mark, 1, end, size)
}

// jsonlReader reads JSON Lines with a small validating JSON parser that
// works on the line in the read buffer.
type jsonlReader struct {
	input  string
	in     *bufio.Reader
	schema *core.Schema
	errs   *core.ErrorPolicy
	index  map[string]int      // field name → field index
	str    []*interner         // per String field
	tp     []*timeparse.Parser // per Timestamp field
	seen   []bool

	lineNo int64
	long   []byte // a line longer than the read buffer
	buf    []byte // the line being parsed
	pos    int
	scr    []byte // unescaped string scratch
}

func newJSONLReader(input string, in io.Reader, fields []core.Field, times TimeFormats, errs *core.ErrorPolicy) (*jsonlReader, error) {
	if len(fields) == 0 {
		return nil, fmt.Errorf("jsonl source %s: no fields: the fields must be named and typed", input)
	}
	schema, err := core.NewSchema(fields...)
	if err != nil {
		return nil, fmt.Errorf("jsonl source %s: %w", input, err)
	}
	br, ok := in.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(in, 64<<10)
	}
	j := &jsonlReader{input: input, in: br, schema: schema, errs: policy(errs),
		index: make(map[string]int, len(fields)), str: make([]*interner, len(fields)), seen: make([]bool, len(fields)),
		tp: make([]*timeparse.Parser, len(fields))}
	for i, f := range fields {
		j.index[f.Name] = i
		switch f.Type {
		case core.String:
			j.str[i] = newInterner()
		case core.Timestamp:
			j.tp[i] = times.parser(f.Name)
		}
	}
	return j, nil
}

// reset points j at in, a line start on line line0+1 (blockReader).
func (j *jsonlReader) reset(in *bufio.Reader, line0 int64, errs *core.ErrorPolicy) {
	j.in, j.lineNo, j.errs = in, line0, errs
}

// clone returns a reader of the same fields with interners and buffers of
// its own, for a block reader; its input is set by reset.
func (j *jsonlReader) clone() *jsonlReader {
	d := &jsonlReader{input: j.input, schema: j.schema, errs: j.errs, index: j.index,
		str: make([]*interner, len(j.str)), seen: make([]bool, len(j.seen)), tp: make([]*timeparse.Parser, len(j.tp))}
	for i, in := range j.str {
		if in != nil {
			d.str[i] = newInterner()
		}
	}
	for i, tp := range j.tp {
		if tp != nil {
			d.tp[i] = tp.Format().Parser()
		}
	}
	return d
}

// readLine returns the next line, without its line end, valid until the
// next call.
func (j *jsonlReader) readLine() ([]byte, error) {
	line, err := j.in.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		j.long = append(j.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = j.in.ReadSlice('\n')
			j.long = append(j.long, line...)
		}
		line = j.long
	}
	if err == io.EOF && len(line) > 0 {
		err = nil
	}
	if err != nil {
		if err == io.EOF {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("jsonl source %s: %w", j.input, err)
	}
	j.lineNo++
	n := len(line)
	if n > 0 && line[n-1] == '\n' {
		n--
		if n > 0 && line[n-1] == '\r' {
			n--
		}
	}
	return line[:n], nil
}

func (j *jsonlReader) read(row []core.Value) (int64, error) {
	for {
		line, err := j.readLine()
		if err != nil {
			return 0, err
		}
		j.buf, j.pos = line, 0
		j.ws()
		if j.pos == len(line) {
			continue // blank line
		}
		if err := j.object(row); err != nil {
			if err := j.errs.Bad(j.input, j.lineNo, string(line), err); err != nil {
				return 0, err
			}
			continue
		}
		return j.lineNo, nil
	}
}

// object parses the line's one object into row.
func (j *jsonlReader) object(row []core.Value) error {
	clear(j.seen)
	if !j.eat('{') {
		return j.syntax("expected '{'")
	}
	j.ws()
	if !j.eat('}') {
		for {
			j.ws()
			if j.peek() != '"' {
				return j.syntax("expected a member name")
			}
			key, err := j.string()
			if err != nil {
				return err
			}
			col, want := j.index[string(key)]
			j.ws()
			if !j.eat(':') {
				return j.syntax("expected ':'")
			}
			j.ws()
			if want {
				if err := j.field(col, row); err != nil {
					return err
				}
				j.seen[col] = true
			} else if err := j.skip(0); err != nil {
				return err
			}
			j.ws()
			if j.eat(',') {
				continue
			}
			if j.eat('}') {
				break
			}
			return j.syntax("expected ',' or '}'")
		}
	}
	j.ws()
	if j.pos != len(j.buf) {
		return j.syntax("unexpected data after the object")
	}
	for i, ok := range j.seen {
		if !ok {
			return fmt.Errorf("field %q is missing", j.schema.Fields[i].Name)
		}
	}
	return nil
}

// field parses the value of field col into row[col].
func (j *jsonlReader) field(col int, row []core.Value) error {
	f := j.schema.Fields[col]
	start := j.pos
	switch c := j.peek(); {
	case c == '"':
		s, err := j.string()
		if err != nil {
			return err
		}
		switch f.Type {
		case core.String:
			row[col] = core.StringValue(j.str[col].bytes(s))
			return nil
		case core.Timestamp:
			// The string aliases the line buffer; Parse keeps no
			// reference to it (its error quotes a copy).
			ns, err := j.tp[col].Parse(unsafe.String(unsafe.SliceData(s), len(s)))
			if err != nil {
				return fmt.Errorf("field %q: %w", f.Name, err)
			}
			row[col] = core.TimeValue(ns)
			return nil
		}
	case c == 't' || c == 'f' || c == 'n':
		b, null, err := j.literal()
		if err != nil {
			return err
		}
		if null {
			return fmt.Errorf("field %q is null", f.Name)
		}
		if f.Type == core.Bool {
			row[col] = core.BoolValue(b)
			return nil
		}
	case c == '-' || (c >= '0' && c <= '9'):
		num, integral, err := j.number()
		if err != nil {
			return err
		}
		s := unsafe.String(unsafe.SliceData(num), len(num)) // strconv keeps no reference
		switch f.Type {
		case core.Float64:
			x, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return fmt.Errorf("field %q: %s is out of range for a float64", f.Name, num)
			}
			row[col] = core.FloatValue(x)
			return nil
		case core.Timestamp:
			ns, err := j.tp[col].ParseNumber(s)
			if err != nil {
				return fmt.Errorf("field %q: %w", f.Name, err)
			}
			row[col] = core.TimeValue(ns)
			return nil
		case core.Int64:
			i, err := parseIntegral(s, integral)
			if err != nil {
				return fmt.Errorf("field %q: %s is not an int64: %v", f.Name, num, err)
			}
			row[col] = core.IntValue(i)
			return nil
		}
	case c == '{' || c == '[':
		if err := j.skip(0); err != nil {
			return err
		}
	default:
		return j.syntax("expected a value")
	}
	return fmt.Errorf("field %q: %s is not %s", f.Name, clip(j.buf[start:j.pos]), article(f.Type))
}

func article(t core.Type) string {
	if t == core.Int64 {
		return "an int64"
	}
	return "a " + t.String()
}

// clip shortens a value quoted in an error message.
func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

var errNotIntegral = errors.New("not integral")

// parseIntegral parses a JSON number that must be an integer: digits only,
// or a fraction/exponent form whose value is integral (1e3, 2.0).
func parseIntegral(s string, integral bool) (int64, error) {
	if integral {
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, errors.New("out of range")
		}
		return i, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) {
		return 0, errNotIntegral
	}
	if f < -(1<<63) || f >= 1<<63 {
		return 0, errors.New("out of range")
	}
	return int64(f), nil
}

func (j *jsonlReader) syntax(msg string) error {
	if j.pos >= len(j.buf) {
		return fmt.Errorf("invalid JSON: %s at the end of the line", msg)
	}
	return fmt.Errorf("invalid JSON at column %d: %s", j.pos+1, msg)
}

func (j *jsonlReader) peek() byte {
	if j.pos < len(j.buf) {
		return j.buf[j.pos]
	}
	return 0
}

func (j *jsonlReader) eat(c byte) bool {
	if j.pos < len(j.buf) && j.buf[j.pos] == c {
		j.pos++
		return true
	}
	return false
}

func (j *jsonlReader) ws() {
	for j.pos < len(j.buf) {
		switch j.buf[j.pos] {
		case ' ', '\t', '\r', '\n':
			j.pos++
		default:
			return
		}
	}
}

// literal parses true, false or null.
func (j *jsonlReader) literal() (b, null bool, err error) {
	rest := j.buf[j.pos:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		j.pos += 4
		return true, false, nil
	case len(rest) >= 5 && string(rest[:5]) == "false":
		j.pos += 5
		return false, false, nil
	case len(rest) >= 4 && string(rest[:4]) == "null":
		j.pos += 4
		return false, true, nil
	}
	return false, false, j.syntax("invalid literal")
}

// number scans a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
// integral reports that it has neither fraction nor exponent.
func (j *jsonlReader) number() (num []byte, integral bool, err error) {
	b, start := j.buf, j.pos
	i := start
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		j.pos = i
		return nil, false, j.syntax("invalid number")
	}
	integral = true
	if i < len(b) && b[i] == '.' {
		integral = false
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			j.pos = i
			return nil, false, j.syntax("invalid number: no digits after '.'")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		integral = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			j.pos = i
			return nil, false, j.syntax("invalid number: no digits in the exponent")
		}
	}
	j.pos = i
	return b[start:i], integral, nil
}

// string parses a JSON string at pos (which holds '"') and returns its
// content: a slice of the line when it has no escapes, else of the scratch
// buffer. Either is valid until the next call.
func (j *jsonlReader) string() ([]byte, error) {
	b := j.buf
	j.pos++
	start := j.pos
	i := start
	for i < len(b) && b[i] != '"' && b[i] != '\\' && b[i] >= 0x20 {
		i++
	}
	if i < len(b) && b[i] == '"' {
		j.pos = i + 1
		return b[start:i], nil
	}
	out := append(j.scr[:0], b[start:i]...)
	for {
		if i >= len(b) {
			j.pos = i
			return nil, j.syntax("unterminated string")
		}
		c := b[i]
		switch {
		case c == '"':
			j.pos = i + 1
			j.scr = out
			return out, nil
		case c < 0x20:
			j.pos = i
			return nil, j.syntax("control character in string")
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		i++
		if i >= len(b) {
			j.pos = i
			return nil, j.syntax("unterminated string")
		}
		switch b[i] {
		case '"', '\\', '/':
			out = append(out, b[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(b[i+1:])
			if !ok {
				j.pos = i
				return nil, j.syntax("invalid \\u escape")
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2, ok := rune(0), false
				if len(b) > i+2 && b[i+1] == '\\' && b[i+2] == 'u' {
					r2, ok = hex4(b[i+3:])
				}
				if d := utf16.DecodeRune(r, r2); ok && d != utf8.RuneError {
					r = d
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			j.pos = i
			return nil, j.syntax("invalid escape")
		}
		i++
	}
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// maxDepth bounds the nesting of skipped values.
const maxDepth = 1000

// skip parses and discards one value.
func (j *jsonlReader) skip(depth int) error {
	if depth > maxDepth {
		return j.syntax("nested too deeply")
	}
	switch c := j.peek(); {
	case c == '"':
		_, err := j.string()
		return err
	case c == 't' || c == 'f' || c == 'n':
		_, _, err := j.literal()
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		_, _, err := j.number()
		return err
	case c == '{' || c == '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		j.pos++
		j.ws()
		if j.eat(end) {
			return nil
		}
		for {
			j.ws()
			if c == '{' {
				if j.peek() != '"' {
					return j.syntax("expected a member name")
				}
				if _, err := j.string(); err != nil {
					return err
				}
				j.ws()
				if !j.eat(':') {
					return j.syntax("expected ':'")
				}
				j.ws()
			}
			if err := j.skip(depth + 1); err != nil {
				return err
			}
			j.ws()
			if j.eat(',') {
				continue
			}
			if j.eat(end) {
				return nil
			}
			return j.syntax("expected ',' or '" + string(end) + "'")
		}
	}
	return j.syntax("expected a value")
}
