package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/parquet-go/parquet-go/format"

	"streamd/core"
)

// ParquetSource reads a Parquet file column by column: row group → column
// chunk → page, each page's values decoded in bulk (dictionary indexes,
// or typed slices of plain values) straight into the rows of pooled
// batches. Dictionary pages are converted to core values once per column
// chunk, so a dictionary-encoded record costs an index lookup per field
// and no allocation. Strings are interned per column (bounded, see
// interner).
//
// Type mapping: INT64 and INT32 (signed or unsigned) → Int64;
// TIMESTAMP(MILLIS|MICROS|NANOS) → Timestamp in ns (a timestamp not
// adjusted to UTC is read as if it were UTC); DATE → Timestamp (midnight
// UTC); DOUBLE and FLOAT → Float64; BYTE_ARRAY (STRING, ENUM, JSON or
// plain bytes) → String; BOOLEAN → Bool. Other types (DECIMAL, INT96,
// FIXED_LEN_BYTE_ARRAY, TIME, nested or repeated fields) are rejected by
// the constructor.
//
// Nulls: an optional column is a Nullable field, and its nulls are
// core.Null, unless the file's statistics show that it holds none (every
// row group's chunk gives statistics with a null count of 0): then the
// field is not Nullable, so that the many writers that mark every column
// optional (pyarrow, Spark) do not cost complete files the fast paths for
// non-nullable fields. A required column is never Nullable. A null met in
// a column that is not Nullable (statistics that lied) is a malformed
// record: it goes to the ErrorPolicy with the row and field.
//
// Pos is the 1-based row number in the file. A ParquetSource is used by
// one goroutine.
type ParquetSource struct {
	path    string
	f       *os.File
	pf      *parquet.File
	schema  *core.Schema
	columns []*parquet.Column // the selected columns, in schema order
	base    int64             // added to every Pos: the file's ordinal (setPosBase)
	rgStart []int64           // row group i's first row (0-based)
	errs    *core.ErrorPolicy

	cur *pqCursor // Next's
	// cursors holds ReadBlock's idle cursors (*pqCursor): a call takes one,
	// so its dictionaries' value arrays and string interners (bounded)
	// outlive one row group instead of growing anew in every block.
	cursors sync.Pool
	rg      int // Next's next row group to open
	total   int64
	closed  bool
}

// pqCursor reads the rows of one open row group at a time: one reader's
// decoding state (Next has one; each ReadBlock call holds one of its own,
// from the source's pool, for the call).
type pqCursor struct {
	cols   []*pqColumn
	rg     int               // the open row group
	rgLeft int64             // rows left in it
	row    int64             // rows of the file before the next row; its Pos is row+1
	null   []int             // per batch row: 1 + index of a null column, 0 if none
	errs   *core.ErrorPolicy // where rows with a null go
}

// newCursor makes a cursor with fresh column decoders.
func (s *ParquetSource) newCursor() *pqCursor {
	cur := &pqCursor{null: make([]int, core.BatchSize), errs: s.errs}
	for i, c := range s.columns {
		pc, _ := newPQColumn(c) // checked when the source was opened
		pc.nullable = s.schema.Fields[i].Nullable
		cur.cols = append(cur.cols, pc)
	}
	return cur
}

// open starts row group i.
func (cur *pqCursor) open(s *ParquetSource, i int) {
	rg := s.pf.RowGroups()[i]
	chunks := rg.ColumnChunks()
	for _, c := range cur.cols {
		c.open(chunks[c.leaf])
	}
	cur.rg, cur.rgLeft, cur.row = i, rg.NumRows(), s.rgStart[i]
}

func (cur *pqCursor) close() {
	for _, c := range cur.cols {
		c.closePages()
	}
}

// Parquet opens the Parquet file at path. columns selects and orders the
// columns to read (nil or empty: all top-level columns, in file order); an
// unknown or unsupported column is an error that lists the columns there
// are. errs handles malformed records (nulls); nil means Fail.
func Parquet(path string, columns []string, errs *core.ErrorPolicy) (*ParquetSource, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("parquet source: %w", err)
	}
	s, err := openParquet(path, f, columns, errs)
	if err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

func openParquet(path string, f *os.File, columns []string, errs *core.ErrorPolicy) (*ParquetSource, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("parquet source: %w", err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("parquet source %s: is a directory", path)
	}
	if st.Size() == 0 {
		return nil, fmt.Errorf("parquet source %s: empty file, not a parquet file", path)
	}
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("parquet source %s: not a readable parquet file: %w", path, err)
	}
	root := pf.Root()
	var names []string
	for _, c := range root.Columns() {
		names = append(names, c.Name())
	}
	if len(columns) == 0 {
		columns = names
	}
	s := &ParquetSource{path: path, f: f, pf: pf, errs: policy(errs), total: pf.NumRows()}
	fields := make([]core.Field, 0, len(columns))
	for _, name := range columns {
		c := root.Column(name)
		if c == nil {
			return nil, fmt.Errorf("parquet source %s: no column %q (columns: %s)", path, name, strings.Join(names, ", "))
		}
		pc, err := newPQColumn(c)
		if err != nil {
			return nil, fmt.Errorf("parquet source %s: %w (columns: %s)", path, err, strings.Join(names, ", "))
		}
		s.columns = append(s.columns, c)
		fields = append(fields, core.Field{Name: name, Type: pc.out, Nullable: c.Optional() && mayHoldNulls(pf, c.Index())})
	}
	s.schema, err = core.NewSchema(fields...)
	if err != nil {
		return nil, fmt.Errorf("parquet source %s: %w", path, err)
	}
	var sum int64
	for _, rg := range pf.RowGroups() {
		s.rgStart = append(s.rgStart, sum)
		sum += rg.NumRows()
	}
	if sum != s.total {
		return nil, fmt.Errorf("parquet source %s: corrupt file: footer says %d rows, row groups hold %d", path, s.total, sum)
	}
	s.cur = s.newCursor()
	return s, nil
}

// mayHoldNulls says whether column chunk leaf of some row group of pf may
// hold a null: its statistics give a null count above 0, or give nothing
// (a writer need not write them; absent statistics decode as all zero).
func mayHoldNulls(pf *parquet.File, leaf int) bool {
	for _, rg := range pf.Metadata().RowGroups {
		if leaf >= len(rg.Columns) {
			return true
		}
		st := &rg.Columns[leaf].MetaData.Statistics
		if st.NullCount > 0 || st.MinValue == nil && st.MaxValue == nil && st.Min == nil && st.Max == nil {
			return true
		}
	}
	return false
}

// Schema is the schema of the selected columns.
func (s *ParquetSource) Schema() *core.Schema { return s.schema }

// Size is the file's row count (core.Sized).
func (s *ParquetSource) Size() int64 { return s.total }

// Next returns the next batch of up to core.BatchSize rows, owned by the
// caller, or (nil, io.EOF) after the last row. A batch never spans two
// row groups (the blocks of ReadBlock). Rows with a null go to the
// ErrorPolicy; under Fail, Next returns its *core.RecordError. A corrupt
// page is an error naming the file, row group and column. Next does not
// block on anything but file reads; it checks ctx once per call.
func (s *ParquetSource) Next(ctx context.Context) (*core.Batch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.closed {
		return nil, errClosed
	}
	cur := s.cur
	rgs := s.pf.RowGroups()
	for {
		if cur.rgLeft == 0 {
			if s.rg == len(rgs) {
				cur.close()
				return nil, io.EOF
			}
			cur.open(s, s.rg)
			s.rg++
			continue
		}
		b, err := s.readBatch(cur)
		if err != nil || b.Len > 0 {
			return b, err
		}
		b.Release() // every row had a null
	}
}

// Blocks is the number of row groups (core.Splittable): block i is row
// group i.
func (s *ParquetSource) Blocks() int { return len(s.pf.RowGroups()) }

// BlockStart is the number of rows before row group b (core.BlockStarts).
func (s *ParquetSource) BlockStart(b int) int64 {
	if b >= len(s.rgStart) {
		return s.total
	}
	return s.rgStart[b]
}

// ReadBlock reads row group b with decoders of its own (core.Splittable),
// in Next's batches. Several goroutines may read different row groups at
// once: the file is read with ReadAt, and each call holds its own pages,
// dictionaries and string interners for its duration (a cursor from the
// source's pool, returned when the call ends).
func (s *ParquetSource) ReadBlock(ctx context.Context, b int, errs *core.ErrorPolicy, emit func(*core.Batch) error) error {
	if b < 0 || b >= s.Blocks() {
		return fmt.Errorf("parquet source %s: no row group %d (%d in the file)", s.path, b, s.Blocks())
	}
	cur, _ := s.cursors.Get().(*pqCursor)
	if cur == nil {
		cur = s.newCursor()
	}
	defer func() {
		cur.close()
		cur.errs = s.errs
		s.cursors.Put(cur)
	}()
	if errs != nil {
		cur.errs = errs
	}
	cur.open(s, b)
	for cur.rgLeft > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		bt, err := s.readBatch(cur)
		if err != nil {
			return err
		}
		if bt.Len == 0 {
			bt.Release()
			continue
		}
		if err := emit(bt); err != nil {
			return err
		}
	}
	return nil
}

// readBatch decodes up to core.BatchSize rows of cur's open row group
// (which has rows left) into a new batch; rows with a null go to the
// ErrorPolicy and are left out, so the batch may be empty.
func (s *ParquetSource) readBatch(cur *pqCursor) (*core.Batch, error) {
	w := s.schema.Width()
	b := core.NewBatch(s.schema)
	k := min(int64(core.BatchSize), cur.rgLeft)
	b.Extend(int(k), s.base+cur.row+1)
	anyNull := false
	for ci, c := range cur.cols {
		null, err := c.fill(b.Vals, w, ci, 0, int(k), cur.null)
		if err != nil {
			b.Release()
			clear(cur.null)
			return nil, fmt.Errorf("parquet source %s: row group %d, column %q: %w", s.path, cur.rg, c.name, err)
		}
		anyNull = anyNull || null
	}
	cur.row += k
	cur.rgLeft -= k
	if anyNull {
		if err := s.dropNulls(b, cur); err != nil {
			b.Release()
			return nil, err
		}
	}
	return b, nil
}

// dropNulls hands the rows of b that hold a null to the ErrorPolicy and
// removes them, keeping the others in order.
func (s *ParquetSource) dropNulls(b *core.Batch, cur *pqCursor) error {
	j := 0
	for i := 0; i < b.Len; i++ {
		nc := cur.null[i]
		if nc == 0 {
			b.Move(j, i)
			j++
			continue
		}
		cur.null[i] = 0
		raw := rowText(b, i, nc-1)
		if err := cur.errs.Bad(s.path, b.Pos[i], raw, fmt.Errorf("field %q is null", cur.cols[nc-1].name)); err != nil {
			clear(cur.null[i:])
			return err
		}
	}
	b.Truncate(j)
	return nil
}

// rowText renders record i of b as comma-separated text for a dead letter,
// with "null" for field nullCol. It allocates; bad records are rare.
func rowText(b *core.Batch, i, nullCol int) string {
	var buf []byte
	for c, v := range b.Row(i) {
		if c > 0 {
			buf = append(buf, ',')
		}
		if c == nullCol {
			buf = append(buf, "null"...)
			continue
		}
		buf = core.AppendText(buf, b.Schema.Fields[c].Type, v)
	}
	return string(buf)
}

// Close closes the file. Safe to call more than once.
func (s *ParquetSource) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.cur.close()
	return s.f.Close()
}

// errClosed is returned by Next after Close.
var errClosed = errors.New("source is closed")

// policy returns p, or a Fail policy when p is nil.
func policy(p *core.ErrorPolicy) *core.ErrorPolicy {
	if p == nil {
		return &core.ErrorPolicy{Mode: core.Fail}
	}
	return p
}

// pageForm says how the current page's values are held.
type pageForm uint8

const (
	formNone   pageForm = iota // no page loaded
	formDict                   // idx into dvals
	formInt64                  // i64
	formInt32                  // i32
	formDouble                 // f64
	formFloat                  // f32
	formBytes                  // bdata/boffs
	formValues                 // the fallback: page.Values() into vbuf (nulls, booleans)
)

// pqColumn is one selected column: its conversion, and a cursor over the
// pages of its chunk in the open row group.
type pqColumn struct {
	name     string
	leaf     int       // column chunk index
	out      core.Type // core type
	scale    int64     // integer multiplier: timestamp unit or days → ns
	unsigned bool      // INT32 holds a uint32
	nullable bool      // a null is core.Null, not a malformed record
	str      *interner

	pages parquet.Pages
	page  parquet.Page
	off   int // next value in the page
	n     int // values in the page
	form  pageForm

	idx   []int32
	dict  parquet.Dictionary // the dictionary dvals was built from
	dvals []core.Value
	i64   []int64
	i32   []int32
	f64   []float64
	f32   []float32
	bdata []byte
	boffs []uint32
	vr    parquet.ValueReader
	vbuf  []parquet.Value
}

func newPQColumn(c *parquet.Column) (*pqColumn, error) {
	pc := &pqColumn{name: c.Name(), leaf: c.Index(), scale: 1}
	if !c.Leaf() {
		return nil, fmt.Errorf("column %q is a group (nested columns are not supported)", c.Name())
	}
	if c.Repeated() {
		return nil, fmt.Errorf("column %q is repeated (lists are not supported)", c.Name())
	}
	t := c.Type()
	var lt format.LogicalTypeValue
	if l := t.LogicalType(); l != nil {
		lt = l.Value
	}
	var ct deprecated.ConvertedType = -1
	if p := t.ConvertedType(); p != nil {
		ct = *p
	}
	unsupported := func() error {
		return fmt.Errorf("column %q has unsupported type %s", c.Name(), t)
	}
	switch t.Kind() {
	case parquet.Int64, parquet.Int32:
		pc.out = core.Int64
		switch l := lt.(type) {
		case nil:
			switch ct {
			case deprecated.TimestampMillis:
				pc.out, pc.scale = core.Timestamp, 1e6
			case deprecated.TimestampMicros:
				pc.out, pc.scale = core.Timestamp, 1e3
			case deprecated.Date:
				pc.out, pc.scale = core.Timestamp, 86400e9
			case -1, deprecated.Int8, deprecated.Int16, deprecated.Int32, deprecated.Int64,
				deprecated.Uint8, deprecated.Uint16, deprecated.Uint64:
			case deprecated.Uint32:
				pc.unsigned = t.Kind() == parquet.Int32
			default:
				return nil, unsupported()
			}
		case *format.IntType:
			pc.unsigned = !l.IsSigned && t.Kind() == parquet.Int32
		case *format.TimestampType:
			pc.out = core.Timestamp
			switch l.Unit.Value.(type) {
			case *format.MilliSeconds:
				pc.scale = 1e6
			case *format.MicroSeconds:
				pc.scale = 1e3
			case *format.NanoSeconds:
				pc.scale = 1
			default:
				return nil, unsupported()
			}
		case *format.DateType:
			pc.out, pc.scale = core.Timestamp, 86400e9
		default:
			return nil, unsupported()
		}
	case parquet.Double, parquet.Float:
		pc.out = core.Float64
	case parquet.ByteArray:
		switch lt.(type) {
		case nil, *format.StringType, *format.EnumType, *format.JsonType:
		default:
			return nil, unsupported()
		}
		pc.out = core.String
		pc.str = newInterner()
	case parquet.Boolean:
		pc.out = core.Bool
	default:
		return nil, unsupported()
	}
	return pc, nil
}

// open starts reading the column's chunk of a new row group.
func (c *pqColumn) open(chunk parquet.ColumnChunk) {
	c.closePages()
	c.pages = chunk.Pages()
	c.dict = nil // a new chunk has its own dictionary, whatever its address
}

func (c *pqColumn) closePages() {
	c.releasePage()
	if c.pages != nil {
		c.pages.Close()
		c.pages = nil
	}
}

func (c *pqColumn) releasePage() {
	if c.page != nil {
		parquet.Release(c.page)
		c.page = nil
	}
	c.form, c.off, c.n, c.vr = formNone, 0, 0, nil
}

// nextPage loads the next page of the chunk and picks its decoding form.
// A panic inside parquet-go while decoding a corrupt page becomes an error:
// a bad file must not crash the job.
func (c *pqColumn) nextPage() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("corrupt page: %v", r)
		}
	}()
	c.releasePage()
	for {
		p, err := c.pages.ReadPage()
		if err == io.EOF {
			return io.ErrUnexpectedEOF // the row group promised more rows
		}
		if err != nil {
			return err
		}
		if p.NumRows() == 0 {
			parquet.Release(p)
			continue
		}
		c.page, c.n, c.off = p, int(p.NumRows()), 0
		break
	}
	p := c.page
	if p.NumNulls() == 0 && p.NumValues() == int64(c.n) && len(p.RepetitionLevels()) == 0 {
		data := p.Data()
		if d := p.Dictionary(); d != nil {
			if data.Kind() == encoding.Int32 && len(data.Int32()) == c.n {
				c.idx, c.form = data.Int32(), formDict
				if d != c.dict {
					c.buildDict(d)
				}
				return nil
			}
		} else {
			if c.plain(data) {
				return nil
			}
		}
	}
	c.form, c.vr = formValues, p.Values()
	if c.vbuf == nil {
		c.vbuf = make([]parquet.Value, core.BatchSize)
	}
	return nil
}

// plain sets up a plain page whose values are a typed slice of n values.
// It reports false for forms it leaves to the fallback (booleans).
func (c *pqColumn) plain(data encoding.Values) bool {
	switch data.Kind() {
	case encoding.Int64:
		if c.out == core.Int64 || c.out == core.Timestamp {
			c.i64, c.form = data.Int64(), formInt64
			return len(c.i64) == c.n
		}
	case encoding.Int32:
		if c.out == core.Int64 || c.out == core.Timestamp {
			c.i32, c.form = data.Int32(), formInt32
			return len(c.i32) == c.n
		}
	case encoding.Double:
		c.f64, c.form = data.Double(), formDouble
		return len(c.f64) == c.n
	case encoding.Float:
		c.f32, c.form = data.Float(), formFloat
		return len(c.f32) == c.n
	case encoding.ByteArray:
		if c.out == core.String {
			c.bdata, c.boffs = data.ByteArray()
			c.form = formBytes
			return len(c.boffs) == c.n+1
		}
	}
	return false
}

// buildDict converts dictionary d to core values, once per column chunk.
func (c *pqColumn) buildDict(d parquet.Dictionary) {
	c.dict = d
	c.dvals = slices.Grow(c.dvals[:0], d.Len())
	for i := range d.Len() {
		v, _ := c.convert(d.Index(int32(i)))
		c.dvals = append(c.dvals, v)
	}
}

// convert turns one parquet value into a core value; ok is false for a null.
func (c *pqColumn) convert(v parquet.Value) (core.Value, bool) {
	if v.IsNull() {
		return core.Value{}, false
	}
	switch c.out {
	case core.String:
		return core.StringValue(c.str.bytes(v.ByteArray())), true
	case core.Bool:
		return core.BoolValue(v.Boolean()), true
	case core.Float64:
		if v.Kind() == parquet.Float {
			return core.FloatValue(float64(v.Float())), true
		}
		return core.FloatValue(v.Double()), true
	}
	var i int64
	if v.Kind() == parquet.Int32 {
		if c.unsigned {
			i = int64(uint32(v.Int32()))
		} else {
			i = int64(v.Int32())
		}
	} else {
		i = v.Int64()
	}
	return core.IntValue(i * c.scale), true
}

// fill writes this column's next k values into rows r0..r0+k-1 of vals (a
// batch's row-major values of width w) at field ci. Rows holding a null
// get null[row] = ci+1 (if not already marked) and fill reports true.
func (c *pqColumn) fill(vals []core.Value, w, ci, r0, k int, null []int) (bool, error) {
	anyNull := false
	for k > 0 {
		if c.off >= c.n {
			if err := c.nextPage(); err != nil {
				return anyNull, err
			}
		}
		m := min(k, c.n-c.off)
		dst := vals[r0*w+ci:]
		switch c.form {
		case formDict:
			dv := c.dvals
			for i, x := range c.idx[c.off : c.off+m] {
				if uint32(x) >= uint32(len(dv)) {
					return anyNull, fmt.Errorf("corrupt page: dictionary index %d out of range [0, %d)", x, len(dv))
				}
				dst[i*w] = dv[x]
			}
		case formInt64:
			src := c.i64[c.off : c.off+m]
			if c.scale == 1 {
				for i, x := range src {
					dst[i*w] = core.IntValue(x)
				}
			} else {
				for i, x := range src {
					dst[i*w] = core.IntValue(x * c.scale)
				}
			}
		case formInt32:
			src := c.i32[c.off : c.off+m]
			if c.unsigned {
				for i, x := range src {
					dst[i*w] = core.IntValue(int64(uint32(x)))
				}
			} else {
				for i, x := range src {
					dst[i*w] = core.IntValue(int64(x) * c.scale)
				}
			}
		case formDouble:
			for i, x := range c.f64[c.off : c.off+m] {
				dst[i*w] = core.FloatValue(x)
			}
		case formFloat:
			for i, x := range c.f32[c.off : c.off+m] {
				dst[i*w] = core.FloatValue(float64(x))
			}
		case formBytes:
			offs, data := c.boffs, c.bdata
			for i := range m {
				j := c.off + i
				lo, hi := offs[j], offs[j+1]
				if lo > hi || int(hi) > len(data) {
					return anyNull, fmt.Errorf("corrupt page: byte array offsets %d..%d out of range", lo, hi)
				}
				dst[i*w] = core.StringValue(c.str.bytes(data[lo:hi]))
			}
		case formValues:
			buf := c.vbuf[:m]
			for got := 0; got < m; {
				n, err := c.vr.ReadValues(buf[got:])
				got += n
				if err != nil && (err != io.EOF || got < m) {
					if err == io.EOF {
						err = io.ErrUnexpectedEOF
					}
					return anyNull, err
				}
			}
			for i, v := range buf {
				cv, ok := c.convert(v)
				if !ok && c.nullable {
					cv = core.Null()
				} else if !ok {
					if null[r0+i] == 0 {
						null[r0+i] = ci + 1
					}
					anyNull = true
				}
				dst[i*w] = cv
			}
		}
		c.off += m
		r0 += m
		k -= m
	}
	return anyNull, nil
}
