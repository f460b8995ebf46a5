package source

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"streamd/core"
)

// CSVOptions configures a CSV source (and the CSV format of Stdin).
type CSVOptions struct {
	// Header says the first record holds the column names. The zero value
	// is false; the job file's default is true.
	Header bool
	// Delimiter separates fields; 0 means ','. It may not be '"', '\r',
	// '\n' or an invalid rune.
	Delimiter rune
	// Columns types the fields. With a header, each column is looked up
	// in the header by name (the header may hold more columns; they are
	// ignored), and empty Columns means every header column, as String.
	// Without a header, Columns names the fields by position and is
	// required.
	Columns []core.Field
	// Reader, if set, is read instead of the file at the path (stdin); the
	// path, if any, only names the input in errors. The source does not
	// close it.
	Reader io.Reader
}

// CSV returns a source of the CSV file at path (RFC 4180, read with
// encoding/csv). Records are checked field by field: a wrong field count,
// a bad quote or a field that does not parse as its column's type
// (core.ParseValue) is a malformed record, reported to errs (nil: Fail)
// as input:line: reason, e.g.
//
//	flights.csv:17: field "delay": "abc" is not an int64
//
// where line is the 1-based line the record starts on, the header line
// counted. Empty lines are skipped. An input with no header line where one
// is expected is an error ("empty input: no header"); a header alone gives
// zero records. String fields of up to 64 Ki distinct values per column are
// interned.
//
// CSV reads the header before it returns, so it blocks while the input
// does.
func CSV(path string, opts CSVOptions, errs *core.ErrorPolicy) (core.Source, error) {
	name, in, closer, err := openInput("csv", path, opts.Reader)
	if err != nil {
		return nil, err
	}
	r, err := newCSVReader(name, in, opts, errs)
	if err != nil {
		if closer != nil {
			closer.Close()
		}
		return nil, err
	}
	return &textSource{schema: r.schema, rr: r, closer: closer}, nil
}

// csvColumn is one field of the output schema: where it is in a record.
type csvColumn struct {
	name string
	typ  core.Type
	idx  int // field index in the record
	str  *interner
}

// csvReader reads records with encoding/csv and converts the selected
// fields.
type csvReader struct {
	input  string
	r      *csv.Reader
	delim  string
	cols   []csvColumn
	want   int // fields per record
	schema *core.Schema
	errs   *core.ErrorPolicy
}

func checkDelimiter(d rune) (rune, error) {
	if d == 0 {
		return ',', nil
	}
	if d == '"' || d == '\r' || d == '\n' || !utf8.ValidRune(d) || d == utf8.RuneError {
		return 0, fmt.Errorf("invalid delimiter %q", d)
	}
	return d, nil
}

// newCSVReader builds the reader and its schema, reading the header line
// when there is one.
func newCSVReader(input string, in io.Reader, opts CSVOptions, errs *core.ErrorPolicy) (*csvReader, error) {
	d, err := checkDelimiter(opts.Delimiter)
	if err != nil {
		return nil, fmt.Errorf("csv source %s: %w", input, err)
	}
	r := csv.NewReader(in)
	r.Comma = d
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	c := &csvReader{input: input, r: r, delim: string(d), errs: policy(errs)}

	fields := opts.Columns
	if !opts.Header {
		if len(fields) == 0 {
			return nil, fmt.Errorf("csv source %s: no header and no columns: the columns must be named", input)
		}
		for i, f := range fields {
			c.cols = append(c.cols, csvColumn{name: f.Name, typ: f.Type, idx: i})
		}
		c.want = len(fields)
	} else {
		header, err := r.Read()
		if err == io.EOF {
			return nil, fmt.Errorf("csv source %s: empty input: no header", input)
		}
		if err != nil {
			return nil, fmt.Errorf("csv source %s: header: %w", input, err)
		}
		header = append([]string(nil), header...) // ReuseRecord: the next Read overwrites it
		header[0] = strings.TrimPrefix(header[0], "\uFEFF")
		c.want = len(header)
		if len(fields) == 0 {
			for i, h := range header {
				c.cols = append(c.cols, csvColumn{name: h, typ: core.String, idx: i})
				fields = append(fields, core.Field{Name: h, Type: core.String})
			}
		} else {
			for _, f := range fields {
				i := indexOf(header, f.Name)
				if i < 0 {
					return nil, fmt.Errorf("csv source %s: no column %q in the header (columns: %s)", input, f.Name, strings.Join(header, ", "))
				}
				c.cols = append(c.cols, csvColumn{name: f.Name, typ: f.Type, idx: i})
			}
		}
	}
	c.schema, err = core.NewSchema(fields...)
	if err != nil {
		return nil, fmt.Errorf("csv source %s: %w", input, err)
	}
	for i := range c.cols {
		if c.cols[i].typ == core.String {
			c.cols[i].str = newInterner()
		}
	}
	return c, nil
}

func indexOf(xs []string, x string) int {
	for i, s := range xs {
		if s == x {
			return i
		}
	}
	return -1
}

func (c *csvReader) read(row []core.Value) (int64, error) {
next:
	for {
		rec, err := c.r.Read()
		if err == io.EOF {
			return 0, io.EOF
		}
		if err != nil {
			var pe *csv.ParseError
			if !errors.As(err, &pe) {
				return 0, fmt.Errorf("csv source %s: %w", c.input, err)
			}
			if err := c.errs.Bad(c.input, int64(pe.StartLine), strings.Join(rec, c.delim), pe.Err); err != nil {
				return 0, err
			}
			continue
		}
		line, _ := c.r.FieldPos(0)
		if len(rec) != c.want {
			if err := c.errs.Bad(c.input, int64(line), strings.Join(rec, c.delim), fmt.Errorf("%d fields, expected %d", len(rec), c.want)); err != nil {
				return 0, err
			}
			continue
		}
		for j := range c.cols {
			col := &c.cols[j]
			s := rec[col.idx]
			if col.typ == core.String {
				row[j] = core.StringValue(col.str.str(s))
				continue
			}
			v, err := core.ParseValue(col.typ, s)
			if err != nil {
				if err := c.errs.Bad(c.input, int64(line), strings.Join(rec, c.delim), fmt.Errorf("field %q: %w", col.name, err)); err != nil {
					return 0, err
				}
				continue next
			}
			row[j] = v
		}
		return int64(line), nil
	}
}
