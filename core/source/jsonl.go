package source

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
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
// ignored, and a member given twice counts as its last value. It is JSON
// with Format JSONLines and no paths.
//
// Values: Int64 takes a JSON number that is integral (1e3 is 1000; 1.5 is
// malformed); Float64 any number; String a string; Bool true or false;
// Timestamp a string or a number read by the field's format in
// JSONOptions.Times (timeparse.Default when absent: an RFC 3339 string or
// another form core.ParseTime accepts, or an integer number of ns since
// the epoch; with a unit, a number of that unit, fraction allowed) — or
// an integer number of ns since the epoch.
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
	o := jsonlOptions(fields)
	o.Times = times
	return JSON(path, o, reader, errs)
}

func jsonlOptions(fields []core.Field) JSONOptions {
	o := JSONOptions{Format: JSONLines, Fields: make([]JSONField, len(fields))}
	for i, f := range fields {
		o.Fields[i].Field = f
	}
	return o
}

// JSONOptions configures a JSON source.
type JSONOptions struct {
	// Format is how the input divides into values (JSONAuto: from its
	// first bytes; a reader given in place of a file, which cannot be
	// looked ahead in, takes '[' as JSONArray and else JSONValues).
	Format JSONFormat
	// Fields are the record's fields (at least one).
	Fields []JSONField
	// Times says how Timestamp fields are written, by field name (absent:
	// timeparse.Default).
	Times TimeFormats
	// Compression is how the file (or reader) is compressed (the zero
	// value is auto: see Compression).
	Compression Compression
	// Explode, when set, is the path (see ParseJSONPath) of an array in
	// each value whose elements are the records: field paths are then
	// relative to the element, and $-rooted ones to the value. A value
	// whose array is null or empty gives no record; one without it, or
	// with something else there, is malformed.
	Explode string
}

// JSONField is a field and where it is found.
type JSONField struct {
	core.Field
	// Path is where the value is (ParseJSONPath); "" is the field's name
	// as one member, taken literally.
	Path string
}

// JSON returns a source of JSON values read from reader if it is set
// (path then only names the input in errors; the source does not close
// reader) or else from the file at path: JSON lines, a top-level array or
// a stream of values (opts.Format), each value a record, or, under
// opts.Explode, an array of records. A record must be an object (or, for
// fields whose paths start with an index, an array); fields are found by
// their paths, other members are ignored, and a member given twice counts
// as its last value. Values are typed as JSONL says.
//
// A field whose path leads nowhere — a member or element that is not
// there, or a value on the way that is not the object or array the path
// needs — is missing; a field whose value (or a value on the way) is JSON
// null is null. The two are told apart in one place (jsonlReader.absent)
// and today both make the record malformed, as in JSONL. Malformed
// records go to errs with input:line, the line the record starts on;
// records that share a line (a one-line array, an exploded array) share
// it.
//
// A regular file is read by blocks of 1 MiB (core.Splittable): JSON lines
// at line starts (JSONL), an array or a stream of values at the starts of
// its values, found by one serial structural pass at open (unitScan; see
// docs/ARCHITECTURE.md, "JSON documents"). The values of an exploded
// array belong to the block their value starts in, so a single document
// (a GeoJSON FeatureCollection) is one block. The steady path allocates
// nothing per record.
func JSON(path string, opts JSONOptions, reader io.Reader, errs *core.ErrorPolicy) (core.Source, error) {
	return jsonSource(path, opts, reader, errs, splitSize)
}

// jsonlSource is JSONL with the block size in bytes (tests make it small).
func jsonlSource(path string, fields []core.Field, times TimeFormats, reader io.Reader, errs *core.ErrorPolicy, size int64) (core.Source, error) {
	o := jsonlOptions(fields)
	o.Times = times
	return jsonSource(path, o, reader, errs, size)
}

// jsonSource is JSON with the block size in bytes.
func jsonSource(path string, opts JSONOptions, reader io.Reader, errs *core.ErrorPolicy, size int64) (core.Source, error) {
	kind := "json"
	if opts.Format == JSONLines {
		kind = "jsonl"
	}
	name, in, closer, err := openInput(kind, path, reader, opts.Compression)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (core.Source, error) {
		if closer != nil {
			closer.Close()
		}
		return nil, err
	}
	f, _ := closer.(*os.File)
	if opts.Format == JSONAuto {
		if opts.Format, err = detectFormat(in.(*bufio.Reader), f); err != nil {
			return fail(fmt.Errorf("%s source %s: %w", kind, name, err))
		}
	}
	r, err := newJSONReader(kind, name, in, opts, errs)
	if err != nil {
		return fail(err)
	}
	if f != nil {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			mark, err := bom.At(f)
			if err != nil {
				return fail(fmt.Errorf("%s source %s: %w", kind, name, err))
			}
			var x *textIndex
			if opts.Format == JSONLines {
				x, err = indexLines(f, mark, 1, st.Size(), size)
			} else {
				x, err = indexUnits(f, mark, 1, st.Size(), size, opts.Format == JSONArray)
			}
			if err != nil {
				return fail(fmt.Errorf("%s source %s: %w", kind, name, err))
			}
			r.area, r.end = mark, st.Size()
			return newBlockText(kind, name, f, x, r, errs, r.schema, func() blockReader { return r.clone() }), nil
		}
	}
	return &textSource{schema: r.schema, rr: r, closer: closer}, nil
}

// detectFormat picks the format of an input whose format is auto from its
// first value: '[' is an array; a first line that holds exactly one value
// is JSON lines, anything else a stream of values. It looks at in's
// buffer (the input is not consumed); for a file f it reads the first
// line whole from the file, for a reader it decides by the first byte
// (lines and values read the same good input alike).
func detectFormat(in *bufio.Reader, f *os.File) (JSONFormat, error) {
	for n := 1; ; n++ {
		w, err := in.Peek(n)
		if len(w) < n {
			if err == io.EOF || err == bufio.ErrBufferFull {
				return JSONLines, nil // blank: no records either way
			}
			return 0, err
		}
		if c := w[n-1]; !isBlank(c) {
			if c == '[' {
				return JSONArray, nil
			}
			if f == nil {
				return JSONValues, nil
			}
			break
		}
	}
	// The first line: one value and nothing else makes JSON lines.
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	mark, err := bom.At(f)
	if err != nil {
		return 0, err
	}
	s := unitScan{phase: scanBetween}
	buf := make([]byte, 64<<10)
	starts, ends := 0, 0
	for off := mark; off < st.Size(); {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), st.Size()-off)], off)
		if n == 0 {
			return 0, err
		}
		w := buf[:n]
		nl := bytes.IndexByte(w, '\n')
		if nl >= 0 {
			w = w[:nl]
		}
		for i := 0; i < len(w); {
			ev, at := s.step(w, i)
			switch ev {
			case evStart:
				starts++
			case evEnd:
				ends++
			}
			if ev == evNone {
				break
			}
			i = at
			if ev != evStart && ev != evEnd {
				i++
			}
		}
		if nl >= 0 || off+int64(n) >= st.Size() {
			if s.phase == scanIn && s.bare { // a bare value ends at the line end
				ends++
			}
			if starts == 1 && ends == 1 {
				return JSONLines, nil
			}
			return JSONValues, nil
		}
		off += int64(n)
	}
	return JSONValues, nil
}

// Field outcomes (jsonlReader.state).
const (
	fieldMissing = iota // no value at its path
	fieldSet            // a value, in the row
	fieldNull           // JSON null at its path or on the way
	fieldOffPath        // a value on the way is not what the path needs
)

// jsonlReader reads JSON values with a small validating JSON parser that
// works on the value in the read buffer: JSON lines (each line), an array
// file or a stream of values (each value, cut by unitScan).
type jsonlReader struct {
	kind   string // "jsonl" or "json", in errors
	input  string
	format JSONFormat
	in     *bufio.Reader
	schema *core.Schema
	errs   *core.ErrorPolicy
	tree   *pnode              // the record's fields
	doc    *pnode              // under explode: the value's $-fields and the array
	str    []*interner         // per String field
	tp     []*timeparse.Parser // per Timestamp field
	state  []uint8             // per field: fieldMissing, …
	off    []*pnode            // per field under fieldOffPath: the node whose value is not what its path needs
	offGot []byte              // … and the first byte of that value

	lineNo int64  // the line the current value starts on
	base   int64  // added to every line reported: the file's ordinal (setPosBase)
	long   []byte // a line longer than the read buffer; a unit
	buf    []byte // the value being parsed
	pos    int
	scr    []byte // unescaped string scratch

	// Units (JSONArray, JSONValues).
	us        unitScan
	area, end int64 // a file's record area; 0, 0 for a reader
	from, to  int64 // the block being read (from = area: the first)
	eof       bool
	stray     bool  // the unit is bytes where no value may be (unitScan evStray)
	unclosed  bool  // the unit ends the input, inside an array never closed
	lineAt    int64 // '\n's are counted in buf before nlPos, lineAt is the line there
	nlPos     int
	curLine   int64    // the line at the unit scan's position
	reported  bool     // the array's missing ']' was reported
	paths     []string // per field: its path as written, "" without

	// Explode.
	exploding bool // reading the elements of an exploded array in buf
	first     bool // no element read yet
	expState  uint8
	expStart  int          // the array's '[' in buf
	docRow    []core.Value // the $-fields of the value
	docFields []int        // their indexes
	recFields []int        // the other fields
}

func newJSONLReader(input string, in io.Reader, fields []core.Field, errs *core.ErrorPolicy) (*jsonlReader, error) {
	return newJSONReader("jsonl", input, in, jsonlOptions(fields), errs)
}

func newJSONReader(kind, input string, in io.Reader, opts JSONOptions, errs *core.ErrorPolicy) (*jsonlReader, error) {
	if len(opts.Fields) == 0 {
		return nil, fmt.Errorf("%s source %s: no fields: the fields must be named and typed", kind, input)
	}
	fields := make([]core.Field, len(opts.Fields))
	for i, f := range opts.Fields {
		fields[i] = f.Field
	}
	schema, err := core.NewSchema(fields...)
	if err != nil {
		return nil, fmt.Errorf("%s source %s: %w", kind, input, err)
	}
	br, ok := in.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(in, 64<<10)
	}
	format := opts.Format
	if format == JSONAuto {
		if format, err = detectFormat(br, nil); err != nil {
			return nil, fmt.Errorf("%s source %s: %w", kind, input, err)
		}
	}
	j := &jsonlReader{kind: kind, input: input, format: format, in: br, schema: schema, errs: policy(errs),
		str: make([]*interner, len(fields)), state: make([]uint8, len(fields)), paths: make([]string, len(fields)), curLine: 1,
		off: make([]*pnode, len(fields)), offGot: make([]byte, len(fields)), tree: newPnode(""),
		tp: make([]*timeparse.Parser, len(fields))}
	j.us = unitScan{array: format == JSONArray}
	if format == JSONValues {
		j.us.phase = scanBetween
	}
	if opts.Explode != "" {
		p, err := ParseJSONPath(opts.Explode)
		if err != nil {
			return nil, fmt.Errorf("%s source %s: explode: %w", kind, input, err)
		}
		j.doc = newPnode("")
		j.doc.field = -1
		if err := j.doc.markExplode(p.steps); err != nil {
			return nil, fmt.Errorf("%s source %s: explode %s: %w", kind, input, p, err)
		}
		j.docRow = make([]core.Value, len(fields))
	}
	for i, f := range opts.Fields {
		p := keyPath(f.Name)
		if f.Path != "" {
			if p, err = ParseJSONPath(f.Path); err != nil {
				return nil, fmt.Errorf("%s source %s: field %q: %w", kind, input, f.Name, err)
			}
			j.paths[i] = p.String()
		}
		t := j.tree
		if p.Rooted && j.doc != nil {
			t = j.doc
			j.docFields = append(j.docFields, i)
		} else {
			j.recFields = append(j.recFields, i)
		}
		if err := t.add(p.steps, i, f.Name, p.Rooted); err != nil {
			return nil, fmt.Errorf("%s source %s: field %q at %s: %w", kind, input, f.Name, p, err)
		}
		switch f.Type {
		case core.String:
			j.str[i] = newInterner()
		case core.Timestamp:
			j.tp[i] = opts.Times.parser(f.Name)
		}
	}
	return j, nil
}

// markExplode marks the node at steps below n as the exploded array.
func (n *pnode) markExplode(steps []pathStep) error {
	if len(steps) == 0 {
		n.explode = true
		return nil
	}
	// Reuse add's tree building with a placeholder field, then turn the
	// leaf into the explode mark.
	if err := n.add(steps, -2, "", true); err != nil {
		return err
	}
	c := n
	for _, s := range steps {
		c.fields = c.fields[:len(c.fields)-1] // the placeholder
		if s.index >= 0 {
			c = c.elems[s.index]
		} else {
			c = c.keys[s.key]
		}
	}
	c.fields = c.fields[:len(c.fields)-1]
	c.field, c.explode = -1, true
	return nil
}

// span says that the reader reads the bytes [from, to) of its file
// (blockText calls it before reset): a block other than the first starts
// at a value, between the values of an array.
func (j *jsonlReader) span(from, to int64) { j.from, j.to = from, to }

// reset points j at in, a record start on line line0+1 (blockReader).
func (j *jsonlReader) reset(in *bufio.Reader, line0 int64, errs *core.ErrorPolicy) {
	j.in, j.lineNo, j.errs = in, line0, errs
	j.eof, j.exploding, j.stray, j.unclosed = false, false, false, false
	j.us = unitScan{array: j.format == JSONArray}
	if j.format == JSONValues || j.from > j.area {
		j.us.phase = scanBetween
		j.us.afterComma = j.from > j.area
	}
	j.curLine, j.reported = line0+1, false
}

// clone returns a reader of the same fields with interners and buffers of
// its own, for a block reader; its input is set by span and reset.
func (j *jsonlReader) clone() *jsonlReader {
	d := &jsonlReader{kind: j.kind, input: j.input, format: j.format, schema: j.schema, errs: j.errs, base: j.base,
		tree: j.tree, doc: j.doc, docFields: j.docFields, recFields: j.recFields, paths: j.paths,
		area: j.area, end: j.end,
		str: make([]*interner, len(j.str)), state: make([]uint8, len(j.state)),
		off: make([]*pnode, len(j.off)), offGot: make([]byte, len(j.offGot)), tp: make([]*timeparse.Parser, len(j.tp))}
	for i, tp := range j.tp {
		if tp != nil {
			d.tp[i] = tp.Format().Parser()
		}
	}
	if j.docRow != nil {
		d.docRow = make([]core.Value, len(j.docRow))
	}
	for i, in := range j.str {
		if in != nil {
			d.str[i] = newInterner()
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
		return nil, fmt.Errorf("%s source %s: %w", j.kind, j.input, err)
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

// readUnit reads the next unit of an array or a stream of values into
// j.long, setting lineNo to its first line. curLine is the line at the
// scan position.
func (j *jsonlReader) readUnit() ([]byte, error) {
	j.long = j.long[:0]
	j.stray, j.unclosed = false, false
	started := false
	for {
		if j.eof {
			if started {
				j.unclosed = j.us.array && j.atEnd()
				j.reported = j.reported || j.unclosed
				return j.long, nil
			}
			if j.us.array && j.us.phase == scanBetween && j.atEnd() && !j.reported {
				// An array never closed, whose last unit was whole or
				// which held none.
				j.reported = true
				j.lineNo = j.curLine
				j.unclosed = true
				return j.long, nil
			}
			return nil, io.EOF
		}
		w, err := j.in.Peek(max(1, j.in.Buffered()))
		if len(w) == 0 {
			if err == io.EOF {
				j.eof = true
				continue
			}
			if err == nil {
				err = io.ErrNoProgress
			}
			return nil, fmt.Errorf("%s source %s: %w", j.kind, j.input, err)
		}
		i := 0
		for i < len(w) {
			ev, at := j.us.step(w, i)
			if ev == evNone {
				at = len(w)
			}
			seg := w[i:at]
			if started {
				j.long = append(j.long, seg...)
			}
			j.curLine += int64(bytes.Count(seg, newline))
			i = at
			switch ev {
			case evStart:
				started = true
				j.lineNo = j.curLine
			case evEnd:
				j.in.Discard(i)
				if j.us.array {
					return trimComma(j.long), nil
				}
				return j.long, nil
			case evEmpty: // the ',' is consumed, the ']' closes the array next
				j.lineNo = j.curLine
				j.long = append(j.long, w[i])
				if w[i] == ',' {
					i++
				}
				j.in.Discard(i)
				return j.long, nil
			case evClosed:
				i++
			case evStray:
				// Bytes where no value may be: the rest of the input is
				// one malformed unit.
				j.lineNo = j.curLine
				j.stray = true
				j.long = append(j.long, w[i:]...)
				j.in.Discard(len(w))
				for {
					w, err := j.in.Peek(max(1, j.in.Buffered()))
					if len(w) == 0 {
						if err == io.EOF {
							j.eof, j.reported = true, true
							return j.long, nil
						}
						return nil, fmt.Errorf("%s source %s: %w", j.kind, j.input, err)
					}
					if len(j.long) < 4096 {
						j.long = append(j.long, w[:min(len(w), 4096)]...)
					}
					j.in.Discard(len(w))
				}
			}
		}
		j.in.Discard(len(w))
	}
}

// atEnd says whether the input's end is the end of the whole input (not
// of a block before the last).
func (j *jsonlReader) atEnd() bool { return j.end == 0 || j.to >= j.end && j.from < j.to }

// trimComma drops the ',' an array element's unit ends with.
func trimComma(u []byte) []byte {
	if n := len(u); n > 0 && u[n-1] == ',' {
		return u[:n-1]
	}
	return u
}

// next reads the next value into buf (pos 0); io.EOF at the end. A
// unit that is not a value (stray bytes, an empty element, the end of an
// array never closed) comes with its reason.
func (j *jsonlReader) next() (bad error, err error) {
	if j.format == JSONLines {
		for {
			line, err := j.readLine()
			if err != nil {
				return nil, err
			}
			j.buf, j.pos = line, 0
			j.ws()
			if j.pos < len(line) {
				j.pos = 0
				j.nlPos, j.lineAt = 0, j.lineNo
				return nil, nil
			}
		}
	}
	u, err := j.readUnit()
	if err != nil {
		return nil, err
	}
	j.buf, j.pos = u, 0
	j.nlPos, j.lineAt = 0, j.lineNo
	switch {
	case j.stray && j.us.stray == scanBefore:
		return fmt.Errorf("expected a JSON array '[' (format: array), found %s", found(u)), nil
	case j.stray:
		return fmt.Errorf("unexpected data after the array's closing ']': %s", found(u)), nil
	case len(u) == 1 && (u[0] == ',' || u[0] == ']'):
		return fmt.Errorf("invalid JSON: expected an array element before %q", u[0]), nil
	case j.unclosed && len(u) == 0:
		return errors.New("the top-level array is not closed (no ']' at the end of the input): the input may be cut short"), nil
	case j.unclosed:
		return errors.New("the top-level array is not closed (no ']' after this element, the last of the input): the input may be cut short"), nil
	}
	return nil, nil
}

func (j *jsonlReader) read(row []core.Value) (int64, error) {
	for {
		if j.exploding {
			line, ok, err := j.element(row)
			if err != nil {
				return 0, err
			}
			if ok {
				return line, nil
			}
			continue
		}
		bad, err := j.next()
		if err != nil {
			return 0, err
		}
		if bad == nil {
			if j.doc != nil {
				bad = j.document()
				if bad == nil {
					continue // its elements come next
				}
			} else if bad = j.record(j.tree, row, true); bad == nil {
				return j.base + j.lineNo, nil
			}
		}
		if err := j.errs.Bad(j.input, j.base+j.lineNo, string(j.buf), bad); err != nil {
			return 0, err
		}
	}
}

// record parses the record at pos, the whole of buf when whole, into row:
// the fields of t.
func (j *jsonlReader) record(t *pnode, row []core.Value, whole bool) error {
	for _, f := range t.fields {
		j.state[f] = fieldMissing
	}
	j.ws()
	want := byte('{')
	if t.elems != nil || t.explode {
		want = '['
	}
	if c, start := j.peek(), j.pos; c != want {
		if j.pos >= len(j.buf) {
			return j.syntax("expected a value")
		}
		if j.skip(0) != nil {
			j.pos = start
			return j.syntax(fmt.Sprintf("expected %s, found %q", kindOf(want), c))
		}
		hint := ""
		if c == '[' && j.format == JSONLines && j.doc == nil {
			hint = " (to read the objects in an array, use json: with format: array, or explode:)"
		}
		return fmt.Errorf("expected %s, found %s%s", kindOf(want), kindOf(c), hint)
	}
	if err := j.value(t, row, 0); err != nil {
		return err
	}
	if whole {
		j.ws()
		if j.pos != len(j.buf) {
			return j.syntax("unexpected data after the " + kindName(want))
		}
	}
	for _, f := range t.fields {
		if j.state[f] != fieldSet {
			if err := j.absent(f, row); err != nil {
				return err
			}
		}
	}
	return nil
}

// absent decides what a field without a value becomes: the one place
// where "missing" (no value at its path, or a value on the way that is not
// the object or array the path needs) and "null" (JSON null at its path or
// on the way) are told apart. A Nullable field takes core.Null for either,
// a field with a Default its default; for any other field both make the
// record malformed (a silent zero would corrupt sums and keys).
func (j *jsonlReader) absent(f int, row []core.Value) error {
	fd := &j.schema.Fields[f]
	switch {
	case fd.Nullable:
		row[f] = core.Null()
		return nil
	case fd.Default != nil:
		row[f] = *fd.Default
		return nil
	}
	name := fd.Name
	switch j.state[f] {
	case fieldNull:
		return fmt.Errorf("field %q is null", name)
	case fieldOffPath:
		n := j.off[f]
		want := "an object"
		if n.elems != nil {
			want = "an array"
		}
		return fmt.Errorf("field %q is missing: %s is %s, not %s", name, orRoot(n.at), kindOf(j.offGot[f]), want)
	}
	if p := j.paths[f]; p != "" {
		return fmt.Errorf("field %q (%s) is missing", name, p)
	}
	return fmt.Errorf("field %q is missing", name)
}

// value parses the value at pos, where node n of the fields' paths is.
func (j *jsonlReader) value(n *pnode, row []core.Value, depth int) error {
	if depth > maxDepth {
		return j.syntax("nested too deeply")
	}
	if n.field >= 0 {
		if j.peek() == 'n' {
			if _, null, err := j.literal(); err != nil {
				return err
			} else if null {
				j.state[n.field] = fieldNull
				return nil
			}
			return j.syntax("invalid literal")
		}
		if err := j.field(n.field, row); err != nil {
			return err
		}
		j.state[n.field] = fieldSet
		return nil
	}
	c := j.peek()
	switch {
	case n.explode && c == '[':
		j.expState, j.expStart = fieldSet, j.pos
		return j.skip(depth)
	case n.keys != nil && c == '{':
		return j.members(n, row, depth)
	case n.elems != nil && c == '[':
		return j.elements(n, row, depth)
	}
	if c == 'n' {
		if _, null, err := j.literal(); err != nil {
			return err
		} else if null {
			j.mark(n, fieldNull, 0)
			if n.explode {
				j.expState = fieldNull
			}
			return nil
		}
	}
	start := j.pos
	if err := j.skip(depth); err != nil {
		return err
	}
	if n.explode {
		j.expState, j.expStart = fieldOffPath, start
	}
	j.mark(n, fieldOffPath, c)
	return nil
}

// mark sets the fields below n to state s (got: the first byte of the
// value that is not what their paths need).
func (j *jsonlReader) mark(n *pnode, s uint8, got byte) {
	for _, f := range n.fields {
		if f >= 0 {
			j.state[f] = s
			j.off[f], j.offGot[f] = n, got
		}
	}
}

// members parses an object at pos, descending into the members n wants.
func (j *jsonlReader) members(n *pnode, row []core.Value, depth int) error {
	j.pos++ // '{'
	j.ws()
	if j.eat('}') {
		return nil
	}
	for {
		j.ws()
		if j.peek() != '"' {
			return j.syntax("expected a member name")
		}
		key, err := j.string()
		if err != nil {
			return err
		}
		c := n.keys[string(key)]
		j.ws()
		if !j.eat(':') {
			return j.syntax("expected ':'")
		}
		j.ws()
		if c != nil {
			err = j.value(c, row, depth+1)
		} else {
			err = j.skip(depth + 1)
		}
		if err != nil {
			return err
		}
		j.ws()
		if j.eat(',') {
			continue
		}
		if j.eat('}') {
			return nil
		}
		return j.syntax("expected ',' or '}'")
	}
}

// elements parses an array at pos, descending into the elements n wants.
func (j *jsonlReader) elements(n *pnode, row []core.Value, depth int) error {
	j.pos++ // '['
	j.ws()
	if j.eat(']') {
		return nil
	}
	for i := 0; ; i++ {
		j.ws()
		var err error
		if i < len(n.elems) && n.elems[i] != nil {
			err = j.value(n.elems[i], row, depth+1)
		} else {
			err = j.skip(depth + 1)
		}
		if err != nil {
			return err
		}
		j.ws()
		if j.eat(',') {
			continue
		}
		if j.eat(']') {
			return nil
		}
		return j.syntax("expected ',' or ']'")
	}
}

// document parses a value under explode: its $-fields into docRow and
// where its array is; the elements are then read by element.
func (j *jsonlReader) document() error {
	j.expState = fieldMissing
	if err := j.record(j.doc, j.docRow, true); err != nil {
		return err
	}
	switch j.expState {
	case fieldMissing:
		return fmt.Errorf("explode: %s is missing", j.explodeAt())
	case fieldOffPath:
		return fmt.Errorf("explode: %s is %s, not an array", j.explodeAt(), kindOf(j.buf[j.expStart]))
	case fieldNull:
		return nil // no records
	}
	j.pos = j.expStart + 1
	j.exploding, j.first = true, true
	return nil
}

// explodeAt is the exploded array's path, for messages.
func (j *jsonlReader) explodeAt() string {
	n := j.doc
	for !n.explode {
		var c *pnode
		for _, x := range n.keys {
			if x.explode || x.hasExplode() {
				c = x
			}
		}
		for _, x := range n.elems {
			if x != nil && (x.explode || x.hasExplode()) {
				c = x
			}
		}
		n = c
	}
	if n.at == "" {
		return "the value"
	}
	return strings.TrimPrefix(n.at, "$.")
}

func (n *pnode) hasExplode() bool {
	for _, x := range n.keys {
		if x.explode || x.hasExplode() {
			return true
		}
	}
	for _, x := range n.elems {
		if x != nil && (x.explode || x.hasExplode()) {
			return true
		}
	}
	return false
}

// element reads the next element of the exploded array into row: ok is
// false at the array's end. A malformed element goes to the policy and
// element returns (0, false, nil) with the next one still to read.
func (j *jsonlReader) element(row []core.Value) (line int64, ok bool, err error) {
	j.ws()
	if j.eat(']') {
		j.exploding = false
		return 0, false, nil
	}
	start := j.pos
	line = j.base + j.lineOf(start)
	bad := j.record(j.tree, row, false)
	if bad != nil {
		j.pos = start
		j.skip(1) // cannot fail: document parsed the whole value
	}
	end := j.pos
	j.ws()
	if !j.eat(',') && j.eat(']') {
		j.exploding = false
	}
	if bad != nil {
		if err := j.errs.Bad(j.input, line, string(j.buf[start:end]), bad); err != nil {
			return 0, false, err
		}
		return 0, false, nil
	}
	for _, f := range j.docFields {
		row[f] = j.docRow[f]
	}
	return line, true, nil
}

// lineOf is the line of buf[p]: calls go forward within a value.
func (j *jsonlReader) lineOf(p int) int64 {
	j.lineAt += int64(bytes.Count(j.buf[j.nlPos:p], newline))
	j.nlPos = p
	return j.lineAt
}

// kindOf names the JSON value that starts with c.
func kindOf(c byte) string {
	switch {
	case c == '{':
		return "an object ('{')"
	case c == '[':
		return "an array ('[')"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || c >= '0' && c <= '9':
		return "a number"
	}
	return fmt.Sprintf("%q (not JSON)", c)
}

func kindName(c byte) string {
	if c == '[' {
		return "array"
	}
	return "object"
}

// found quotes the start of a unit that is not a value.
func found(u []byte) string {
	return strconv.Quote(clip(bytes.TrimSpace(u)))
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
		what := "line"
		if j.format != JSONLines {
			what = "value"
		}
		return fmt.Errorf("invalid JSON: %s at the end of the %s", msg, what)
	}
	if j.format == JSONLines {
		return fmt.Errorf("invalid JSON at column %d: %s", j.pos+1, msg)
	}
	// A unit need not start a line: columns only after a '\n' in it.
	if nl := bytes.LastIndexByte(j.buf[:j.pos], '\n'); nl >= 0 {
		line := j.lineNo + int64(bytes.Count(j.buf[:j.pos], newline))
		return fmt.Errorf("invalid JSON at line %d, column %d: %s", line, j.pos-nl, msg)
	}
	return fmt.Errorf("invalid JSON at byte %d of the value: %s", j.pos+1, msg)
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
