package source

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"streamd/core"
	"streamd/core/internal/bom"
	"streamd/core/timeparse"
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
	// Times says how Timestamp columns are written, by column name; a
	// column not in it takes timeparse.Default.
	Times TimeFormats
	// Reader, if set, is read instead of the file at the path (stdin); the
	// path, if any, only names the input in errors. The source does not
	// close it.
	Reader io.Reader
	// Compression is how the input is compressed (the zero value is
	// CompressionAuto: by the path's extension, then by its first bytes).
	// A compressed file is decompressed once, when the source opens, into
	// an unlinked temporary file that is then read as the plain file would
	// be (blocks, parallel parsing); a compressed Reader is decompressed as
	// it is read.
	Compression Compression
	// Parallelism is the number of goroutines that parse a CSV file (see
	// CSV): 0 means auto, min(4, runtime.GOMAXPROCS(0)); 1 means the
	// sequential reader. It applies to regular files larger than one
	// block (256 KiB), not to Reader or stdin. Negative is an error.
	Parallelism int
	// MaxQuotedLines and MaxQuotedBytes bound a quoted field that spans
	// line ends: once it holds MaxQuotedLines '\n's, or a '\n' more than
	// MaxQuotedBytes bytes after its opening quote, it counts as unclosed
	// (ErrUnclosedQuote: the record is malformed and reading resumes on
	// the line after the one it opened on). 0 means the defaults,
	// DefaultMaxQuotedLines (10,000) and DefaultMaxQuotedBytes (1 MiB);
	// negative is an error.
	MaxQuotedLines int
	MaxQuotedBytes int64
}

// CSV returns a source of the CSV file at path (RFC 4180, read with
// encoding/csv). Records are checked field by field: a wrong field count,
// a bad quote or a field that does not parse as its column's type
// (core.ParseValue; a Timestamp column by its format in opts.Times) is a
// malformed record, reported to errs (nil: Fail)
// as input:line: reason, e.g.
//
//	flights.csv:17: field "delay": "abc" is not an int64
//
// where line is the 1-based line the record starts on, the header line
// counted. A quoted field's value is its bytes between the quotes, with
// "" read as '"': a line break inside it, "\r\n" or "\n", is part of the
// value (RFC 4180), kept as written; the "\r\n" or "\n" that ends a
// record is in no field. Empty lines are skipped. A UTF-8 byte order mark
// at the start of the input is dropped before parsing, so it is in no
// field (with or without a header, quoted or not) and a mark alone is an
// empty input. An input with no header line where one is expected is an
// error ("empty input: no header"); a header alone gives zero records.
//
// Unclosed quotes: a quoted field that spans a line end must close
// properly. One that runs past opts.MaxQuotedLines lines or
// opts.MaxQuotedBytes bytes, meets a quote that closes nothing, or is open
// at the end of the input makes its record malformed (ErrUnclosedQuote,
// reported on the record's first line; the dead letter holds its text, at
// most 4 KiB), and reading resumes on the line after the one the field
// opened on: the stray quote costs one record. The rule (csvFrame) is the
// same for the sequential reader, the blocks and the parallel parser. String fields of
// up to 64 Ki distinct values per column are interned.
//
// Missing values: an empty field (unquoted, or quoted "": encoding/csv
// does not tell them apart) of a Nullable column is core.Null, and of a
// column with a Default is that value; this holds for String columns too,
// so a String column that should keep "" is neither. An empty field of any
// other non-String column is malformed as before.
//
// CSV reads the header before it returns, so it blocks while the input
// does.
//
// A regular file is read by blocks (core.Splittable) for source workers:
// block b is the records that start in bytes [b·1 MiB, (b+1)·1 MiB) of the
// file after the header. CSV finds where they start, and on which line,
// in one serial pass when it opens (textIndex, by csvFrame: the record
// rule the reader follows too), so the blocks' records, Pos and malformed
// records are the sequential reader's, whatever the quoting. Next's batches end at block
// ends. Other inputs (opts.Reader, stdin) are read with Next only.
//
// A regular file larger than one block (256 KiB) is parsed in parallel
// unless opts.Parallelism is 1: a reader goroutine cuts it into blocks at
// record boundaries and Parallelism workers (0: min(4, GOMAXPROCS)) parse
// them into batches, which Next hands on in file order. The records, their
// order and Pos, and the ErrorPolicy's calls (made in file order, from the
// goroutine that calls Next, never concurrently) are the sequential
// reader's; a batch may be shorter (it ends at a block's end and before a
// malformed record), so under Fail the records before the malformed one
// reach the caller, where the sequential reader drops those of its last
// batch. After a quoting error (a csv.ParseError, an unclosed quote) the rest of the file is
// read sequentially. The goroutines start on the first Next and stop at
// the end of the file or on Close, which the caller must call; memory in
// flight is at most 2×Parallelism+1 blocks and the batches of as many
// parsed blocks (a record takes 24 bytes a field).
func CSV(path string, opts CSVOptions, errs *core.ErrorPolicy) (core.Source, error) {
	return csvSource(path, opts, errs, csvBlockSize)
}

// csvSource is CSV with the parallel reader's block size in bytes (tests
// make it small).
func csvSource(path string, opts CSVOptions, errs *core.ErrorPolicy, blockSize int) (core.Source, error) {
	return csvSplitSource(path, opts, errs, blockSize, splitSize)
}

// csvSplitSource is csvSource with the size of the blocks of ReadBlock in
// bytes (tests make it small too).
func csvSplitSource(path string, opts CSVOptions, errs *core.ErrorPolicy, blockSize int, size int64) (core.Source, error) {
	if opts.Parallelism < 0 {
		return nil, fmt.Errorf("csv source %s: parallelism %d: expected 0 (auto) or more", path, opts.Parallelism)
	}
	name, in, closer, err := openInput("csv", path, opts.Reader, opts.Compression)
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
	f, ok := closer.(*os.File)
	if !ok {
		return &textSource{schema: r.schema, rr: r, closer: closer}, nil
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return &textSource{schema: r.schema, rr: r, closer: closer}, nil
	}
	bt, off, line, err := csvBlocks(f, st.Size(), r, size)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("csv source %s: %w", name, err)
	}
	if csvParallelism(opts.Parallelism) > 1 && st.Size() > int64(blockSize) {
		return newCSVParallel(bt, r, off, line, csvParallelism(opts.Parallelism), blockSize), nil
	}
	return bt, nil
}

// csvBlocks finds the blocks of the CSV file f of the given size, whose
// header (if any) r has read, and returns the block reader of f with the
// offset and line where the records start.
func csvBlocks(f *os.File, end int64, r *csvReader, size int64) (bt *blockText, off, line int64, err error) {
	mark, err := bom.At(f) // dropped by the bom.Reader: not in r.start
	if err != nil {
		return nil, 0, 0, err
	}
	off = mark + r.start // after the header, if any
	if line, err = linesBefore(f, off); err != nil {
		return nil, 0, 0, err
	}
	x, err := indexCSV(f, off, line, end, &r.frame, size)
	if err != nil {
		return nil, 0, 0, err
	}
	bt = newBlockText("csv", r.input, f, x, r, r.errs, r.schema, func() blockReader { return r.clone() })
	bt.ahead = true
	return bt, off, line, nil
}

// csvColumn is one field of the output schema: where it is in a record.
type csvColumn struct {
	name string
	typ  core.Type
	idx  int // field index in the record
	str  *interner
	// onEmpty says an empty field takes empty (core.Null for a Nullable
	// column, else its Default) instead of being parsed.
	onEmpty bool
	empty   core.Value
	tp      *timeparse.Parser // Timestamp columns: this reader's own
}

// csvCol is the csvColumn of field f at record index i.
func csvCol(f core.Field, i int) csvColumn {
	c := csvColumn{name: f.Name, typ: f.Type, idx: i}
	switch {
	case f.Nullable:
		c.onEmpty, c.empty = true, core.Null()
	case f.Default != nil:
		c.onEmpty, c.empty = true, *f.Default
	}
	return c
}

// TimeFormats says how Timestamp fields are written, by field name (a
// field not in it takes timeparse.Default). The formats are shared; each
// reader takes parsers of its own.
type TimeFormats map[string]*timeparse.Format

// parser returns a new parser of field name's format.
func (t TimeFormats) parser(name string) *timeparse.Parser {
	if f := t[name]; f != nil {
		return f.Parser()
	}
	return timeparse.Default.Parser()
}

// csvReader reads records with encoding/csv and converts the selected
// fields.
type csvReader struct {
	input  string
	r      *csv.Reader
	frame  csvFrame      // the record rule, with the quoted-field limits
	g      *quoteGuard   // r reads through it (attach)
	gb     *bufio.Reader // over g: r's buffer
	delim  string        // the delimiter, to join the fields of a malformed record
	comma  rune          // the same
	cols   []csvColumn
	want   int // fields per record
	schema *core.Schema
	errs   *core.ErrorPolicy
	line0  int64 // lines of the input before r's first byte
	// start is the offset in the input of the first record after the
	// header (0 without one): encoding/csv's InputOffset after the header,
	// less the extra '\r' the guard served before each "\r\n" in the
	// header's quoted fields (quoteGuard), each of which left one "\r\n"
	// in a name.
	start int64
	base  int64 // added to every line reported: the file's ordinal (setPosBase)
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
	if opts.MaxQuotedLines < 0 || opts.MaxQuotedBytes < 0 {
		return nil, fmt.Errorf("csv source %s: max quoted lines %d, bytes %d: expected 0 (the default) or more", input, opts.MaxQuotedLines, opts.MaxQuotedBytes)
	}
	c := &csvReader{input: input, delim: string(d), comma: d, errs: policy(errs),
		frame: newCSVFrame(d, opts.MaxQuotedLines, opts.MaxQuotedBytes)}
	c.attach(in, -1)
	r := c.r

	fields := opts.Columns
	if !opts.Header {
		if len(fields) == 0 {
			return nil, fmt.Errorf("csv source %s: no header and no columns: the columns must be named", input)
		}
		for i, f := range fields {
			c.cols = append(c.cols, csvCol(f, i))
		}
		c.want = len(fields)
	} else {
		header, err := r.Read()
		if err == io.EOF {
			return nil, fmt.Errorf("csv source %s: empty input: no header", input)
		}
		if err == errOpenQuote {
			l, _ := r.FieldPos(0)
			return nil, fmt.Errorf("csv source %s: header: %w", input, c.openRecord(int64(l)).reason)
		}
		if err != nil {
			return nil, fmt.Errorf("csv source %s: header: %w", input, err)
		}
		header = append([]string(nil), header...) // ReuseRecord: the next Read overwrites it
		c.start = r.InputOffset()
		for _, h := range header {
			c.start -= int64(strings.Count(h, "\r\n"))
		}
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
				c.cols = append(c.cols, csvCol(f, i))
			}
		}
	}
	c.schema, err = core.NewSchema(fields...)
	if err != nil {
		return nil, fmt.Errorf("csv source %s: %w", input, err)
	}
	for i := range c.cols {
		switch c.cols[i].typ {
		case core.String:
			c.cols[i].str = newInterner()
		case core.Timestamp:
			c.cols[i].tp = opts.Times.parser(c.cols[i].name)
		}
	}
	return c, nil
}

// newRawCSV returns the encoding/csv reader every CSV reader uses: comma
// d, any field count (checked per record), records reused.
func newRawCSV(in io.Reader, d rune) *csv.Reader {
	r := csv.NewReader(in)
	r.Comma = d
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	return r
}

// reset points c at in, a record boundary on line line0+1 (blockReader).
func (c *csvReader) reset(in *bufio.Reader, line0 int64, errs *core.ErrorPolicy) {
	c.attach(in, -1)
	c.line0, c.errs = line0, errs
}

// attach makes c read in, a record start, through its quoteGuard, serving
// no byte at or past offset stop of in (-1: none; see quoteGuard).
func (c *csvReader) attach(in io.Reader, stop int64) {
	if c.g == nil {
		c.g = &quoteGuard{f: &c.frame}
		c.gb = bufio.NewReaderSize(c.g, 64<<10)
	}
	c.g.reset(in, stop)
	c.gb.Reset(c.g)
	c.r = newRawCSV(c.gb, c.comma)
}

// clone returns a reader of the same columns with interners of its own,
// for a parse worker; its r is set per block.
func (c *csvReader) clone() *csvReader {
	d := *c
	d.r, d.g, d.gb = nil, nil, nil
	d.cols = append([]csvColumn(nil), c.cols...)
	for i := range d.cols {
		if d.cols[i].str != nil {
			d.cols[i].str = newInterner()
		}
		if tp := d.cols[i].tp; tp != nil {
			d.cols[i].tp = tp.Format().Parser()
		}
	}
	return &d
}

func indexOf(xs []string, x string) int {
	for i, s := range xs {
		if s == x {
			return i
		}
	}
	return -1
}

// badRecord is a malformed record as the reader found it: the line it
// starts on, its text (the fields read, joined by the delimiter) and why it
// is bad. quoting marks a csv.ParseError or an unclosed quote (a bare or extraneous quote, a
// quoted field left open at the end of the input): where such a record
// ends depends on what follows it, so a parallel worker that meets one
// cannot trust its block's end (see csvParallel).
type badRecord struct {
	line    int64
	raw     string
	reason  error
	quoting bool
}

func (b *badRecord) Error() string { return fmt.Sprintf("line %d: %v", b.line, b.reason) }

func (c *csvReader) read(row []core.Value) (int64, error) {
	for {
		line, err := c.next(row)
		if bad, ok := err.(*badRecord); ok {
			if err := c.errs.Bad(c.input, bad.line, bad.raw, bad.reason); err != nil {
				return 0, err
			}
			continue
		}
		return line, err
	}
}

// next is read without the error policy: it fills row with the next
// record and returns its line, or returns a *badRecord for a malformed
// one (row then holds garbage), io.EOF after the last record, or a read
// error. It allocates only for malformed records.
func (c *csvReader) next(row []core.Value) (int64, error) {
	rec, err := c.r.Read()
	if err == io.EOF {
		return 0, io.EOF
	}
	if err != nil {
		if err == errOpenQuote {
			l, _ := c.r.FieldPos(0)
			return 0, c.openRecord(c.base + c.line0 + int64(l))
		}
		var pe *csv.ParseError
		if !errors.As(err, &pe) {
			return 0, fmt.Errorf("csv source %s: %w", c.input, err)
		}
		return 0, &badRecord{line: c.base + c.line0 + c.g.shift + int64(pe.StartLine), raw: strings.Join(rec, c.delim), reason: pe.Err, quoting: true}
	}
	l, _ := c.r.FieldPos(0)
	line := c.base + c.line0 + c.g.shift + int64(l)
	if len(rec) != c.want {
		return 0, &badRecord{line: line, raw: strings.Join(rec, c.delim), reason: fmt.Errorf("%d fields, expected %d", len(rec), c.want)}
	}
	for j := range c.cols {
		col := &c.cols[j]
		s := rec[col.idx]
		if col.onEmpty && s == "" {
			row[j] = col.empty
			continue
		}
		if col.typ == core.String {
			row[j] = core.StringValue(col.str.str(s))
			continue
		}
		if col.tp != nil {
			ns, err := col.tp.Parse(s)
			if err != nil {
				return 0, &badRecord{line: line, raw: strings.Join(rec, c.delim), reason: fmt.Errorf("field %q: %w", col.name, err)}
			}
			row[j] = core.TimeValue(ns)
			continue
		}
		v, err := core.ParseValue(col.typ, s)
		if err != nil {
			return 0, &badRecord{line: line, raw: strings.Join(rec, c.delim), reason: fmt.Errorf("field %q: %w", col.name, err)}
		}
		row[j] = v
	}
	return line, nil
}

// openRecord is the malformed record of the unclosed quote c's guard has
// just dropped; line is encoding/csv's line for it, less the guard's
// shift (the input's line is line + badShift). The reason's lines are the
// file's (without the ordinal base).
func (c *csvReader) openRecord(line int64) *badRecord {
	g := c.g
	line += g.badShift
	local := line - c.base
	return &badRecord{line: line, raw: string(g.bad), quoting: true,
		reason: c.frame.openReason(local, g.badLines, g.badAtLines, g.badWhy, g.badCut)}
}
