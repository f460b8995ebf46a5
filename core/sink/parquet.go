package sink

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"unsafe"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"

	"streamd/core"
)

// ParquetOptions configures a Parquet sink.
type ParquetOptions struct {
	// Compression is the codec of every column chunk: "snappy" (the
	// default, as DuckDB's and Spark's), "zstd", "gzip", "lz4" or "none".
	Compression string
	// RowGroupRows is the number of rows per row group (the last may hold
	// fewer); 0 means DefaultRowGroupRows.
	RowGroupRows int64
	// pageBytes is the Parquet writer's page buffer size in bytes; 0 means
	// parquet-go's default (256 KiB). Tests make it small so that a few
	// thousand rows fill several pages per column.
	pageBytes int
}

// DefaultRowGroupRows is the default row group size: 122,880 rows, as
// DuckDB's (a multiple of its 2,048-row vectors), about 1–10 MB of
// compressed columns for a job's usual output width.
const DefaultRowGroupRows = 122_880

// ParquetCodec returns the codec named by ParquetOptions.Compression.
func ParquetCodec(name string) (compress.Codec, error) {
	switch name {
	case "", "snappy":
		return &parquet.Snappy, nil
	case "zstd":
		return &parquet.Zstd, nil
	case "gzip":
		return &parquet.Gzip, nil
	case "lz4":
		return &parquet.Lz4Raw, nil
	case "none", "uncompressed":
		return &parquet.Uncompressed, nil
	}
	return nil, fmt.Errorf("unknown compression %q (expected snappy, zstd, gzip, lz4 or none)", name)
}

// Parquet returns a sink that writes a Parquet file at path.
//
// Columns are the schema's fields in order: int64 → INT64, float64 →
// DOUBLE, string → BYTE_ARRAY (STRING), bool → BOOLEAN, timestamp → INT64
// TIMESTAMP(NANOS, adjusted to UTC); a Nullable field is an optional
// column whose nulls are Parquet nulls, the others are required. Rows are
// cut into row groups of opts.RowGroupRows, so the file depends on the
// records alone: the same records give the same bytes whatever the batch
// sizes, channels or workers: every call into the Parquet writer covers
// rows at fixed positions of the file (see rowChunker), and the writer
// cuts pages only at its calls' boundaries.
//
// Like the text file sinks, it writes a temporary file in the
// destination's directory and renames it when Close has written the
// footer. In exactly-once mode (OpenEpochs) each epoch's rows go to their
// own Parquet part, <path>.parts/epoch-<n>, complete (footer written) and
// fsynced at the epoch's barrier — a Parquet file cannot take more rows
// after its footer — and Close copies the parts' rows, in epoch order,
// into the final file with the same row groups as a run without
// checkpoints: its bytes do not depend on where the barriers fell.
func Parquet(path string, opts ParquetOptions) core.Sink {
	return &parquetSink{path: path, opts: opts}
}

// parquetSink is a Parquet file sink. Used by one goroutine.
type parquetSink struct {
	path   string
	opts   ParquetOptions
	codec  compress.Codec
	schema *parquet.Schema
	width  int
	state  state
	err    error

	file   *atomicFile     // the final file's temporary file (not in epochs)
	w      *parquet.Writer // writes to file, or to the epoch's part
	chunks rowChunker      // writes to w
	rows   []parquet.Row   // reused: one batch's rows
	vals   []parquet.Value // their values, width per row

	// Exactly-once mode (OpenEpochs): epochs is set, and the epoch's part
	// is opened on its first row.
	epochs  *epochState
	part    io.Writer // the part file, through the CRC
	checked verifiedParts
}

func (s *parquetSink) fail(err error) error {
	if s.err == nil {
		s.err = fmt.Errorf("parquet sink %s: %w", s.path, err)
	}
	return s.err
}

// prepare maps the schema and the options to Parquet's.
func (s *parquetSink) prepare(schema *core.Schema) error {
	if s.state != created {
		return errors.New("opened twice")
	}
	codec, err := ParquetCodec(s.opts.Compression)
	if err != nil {
		return err
	}
	if s.opts.RowGroupRows < 0 {
		return fmt.Errorf("row group size %d is negative", s.opts.RowGroupRows)
	}
	if s.opts.RowGroupRows == 0 {
		s.opts.RowGroupRows = DefaultRowGroupRows
	}
	s.codec, s.width = codec, schema.Width()
	fields := make([]parquet.Field, len(schema.Fields))
	for i, f := range schema.Fields {
		var n parquet.Node
		switch f.Type {
		case core.Int64:
			n = parquet.Int(64)
		case core.Float64:
			n = parquet.Leaf(parquet.DoubleType)
		case core.String:
			n = parquet.String()
		case core.Bool:
			n = parquet.Leaf(parquet.BooleanType)
		case core.Timestamp:
			n = parquet.Timestamp(parquet.Nanosecond)
		default:
			return fmt.Errorf("field %q: type %s has no Parquet type", f.Name, f.Type)
		}
		if f.Nullable {
			n = parquet.Optional(n)
		} else {
			n = parquet.Required(n)
		}
		fields[i] = orderedField{Node: n, name: f.Name}
	}
	s.schema = parquet.NewSchema("streamd", orderedGroup(fields))
	if st, err := os.Lstat(s.path); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("%s exists and is not a regular file", s.path)
	}
	return nil
}

func (s *parquetSink) newWriter(out io.Writer) *parquet.Writer {
	opts := []parquet.WriterOption{s.schema, parquet.Compression(s.codec),
		parquet.MaxRowsPerRowGroup(s.opts.RowGroupRows), parquet.CreatedBy("streamd", "", "")}
	if s.opts.pageBytes > 0 {
		opts = append(opts, parquet.PageBufferSize(s.opts.pageBytes))
	}
	return parquet.NewWriter(out, opts...)
}

// Open creates the temporary file and the Parquet writer.
func (s *parquetSink) Open(schema *core.Schema) error {
	if err := s.prepare(schema); err != nil {
		return s.fail(err)
	}
	f, err := createAtomic(s.path)
	if err != nil {
		return s.fail(err)
	}
	s.file, s.w = f, s.newWriter(f)
	s.chunks.reset(s.w, s.width)
	s.state = opened
	return nil
}

// OpenEpochs implements core.EpochSink: as Open, but rows go to one part
// per epoch in <path>.parts, and a restore from checkpoint restored keeps
// the parts of epochs ≤ restored.
func (s *parquetSink) OpenEpochs(schema *core.Schema, restored uint64) error {
	if err := s.prepare(schema); err != nil {
		return s.fail(err)
	}
	ep := &epochState{dir: s.path + ".parts", epoch: restored + 1}
	if restored > 0 {
		var err error
		if ep.manifest, err = s.checked.restoredManifest(ep.dir, restored); err != nil {
			return s.fail(fmt.Errorf("restore from checkpoint %d: output parts: %w", restored, err))
		}
	}
	if err := keepParts(ep.dir, restored); err != nil {
		return s.fail(err)
	}
	s.epochs = ep
	s.state = opened
	return nil
}

// Write adds the records of b (borrowed) to the current row group.
// Marker batches are ignored.
func (s *parquetSink) Write(b *core.Batch) error {
	if s.err != nil {
		return s.err
	}
	if s.state != opened {
		return s.fail(errNotOpen)
	}
	if b.Kind != core.Data || b.Len == 0 {
		return nil
	}
	if s.w == nil {
		if err := s.openPart(); err != nil {
			return s.fail(err)
		}
	}
	n := b.Len
	if cap(s.rows) < n {
		s.rows = make([]parquet.Row, n)
		s.vals = make([]parquet.Value, n*s.width)
	}
	rows := s.rows[:n]
	for r := range n {
		rec := b.Row(r)
		row := s.vals[r*s.width : (r+1)*s.width : (r+1)*s.width]
		for c, f := range b.Schema.Fields {
			v := rec[c]
			var def int // definition level: 1 for a value of an optional column
			if f.Nullable {
				if v.IsNull() {
					row[c] = parquet.NullValue().Level(0, 0, c)
					continue
				}
				def = 1
			}
			var pv parquet.Value
			switch f.Type {
			case core.Int64, core.Timestamp:
				pv = parquet.Int64Value(v.Int())
			case core.Float64:
				pv = parquet.DoubleValue(v.Float())
			case core.String:
				str := v.Str()
				pv = parquet.ByteArrayValue(unsafe.Slice(unsafe.StringData(str), len(str)))
			case core.Bool:
				pv = parquet.BooleanValue(v.Bool())
			}
			row[c] = pv.Level(0, def, c)
		}
		rows[r] = row
	}
	err := s.chunks.write(rows)
	clear(s.vals[:n*s.width]) // drop the references to the batch's strings
	if err != nil {
		return s.fail(err)
	}
	return nil
}

// openPart starts the current epoch's part.
func (s *parquetSink) openPart() error {
	ep := s.epochs
	f, err := os.Create(filepath.Join(ep.dir, partName(ep.epoch)))
	if err != nil {
		return err
	}
	ep.part, ep.size, ep.crc = f, 0, 0
	s.part = writerFunc(func(p []byte) (int, error) {
		n, err := f.Write(p)
		ep.size += int64(n)
		ep.crc = crc32.Update(ep.crc, castagnoli, p[:n])
		return n, err
	})
	s.w = s.newWriter(s.part)
	s.chunks.reset(s.w, s.width)
	return nil
}

// closePart writes the part's footer, fsyncs it and lists it in the
// manifest.
func (s *parquetSink) closePart() error {
	ep := s.epochs
	if ep.part == nil {
		return nil
	}
	err := s.chunks.flush()
	if err == nil {
		err = s.w.Close()
	}
	s.w = nil
	if err == nil {
		err = ep.part.Sync()
	}
	if cerr := ep.part.Close(); err == nil {
		err = cerr
	}
	ep.part = nil
	if err != nil {
		return err
	}
	ep.manifest = manifestLine(ep.manifest, ep.epoch, ep.size, ep.crc)
	return nil
}

// Barrier implements core.EpochSink: the epoch's part is complete and
// durable.
func (s *parquetSink) Barrier(epoch uint64) error {
	if s.err != nil {
		return s.err
	}
	if s.epochs == nil {
		return nil
	}
	if err := s.closePart(); err != nil {
		return s.fail(err)
	}
	s.epochs.epoch = epoch + 1
	if err := syncDir(s.epochs.dir); err != nil {
		return s.fail(err)
	}
	return nil
}

// Commit implements core.EpochSink (nothing to do: see textSink.Commit).
func (s *parquetSink) Commit(uint64) error { return nil }

// Manifest implements core.OutputManifest.
func (s *parquetSink) Manifest() []byte {
	if s.epochs == nil {
		return nil
	}
	m := s.epochs.manifest
	return m[:len(m):len(m)]
}

// VerifyOutput implements core.OutputManifest.
func (s *parquetSink) VerifyOutput(manifest []byte, restored uint64) error {
	return s.checked.verify(s.path+".parts", manifest, restored)
}

// Close writes the footer and renames the file into place; in epochs mode
// it first copies the parts into the final file. On failure nothing
// appears at the path. Safe to call more than once.
func (s *parquetSink) Close() error {
	if s.state == done {
		return s.err
	}
	if s.state != opened {
		s.state = done
		return s.fail(errNotOpen)
	}
	s.state = done
	err := s.err
	if s.epochs != nil {
		if err == nil {
			err = s.finishEpochs()
		}
	} else {
		if err == nil {
			err = s.chunks.flush()
		}
		if err == nil {
			err = s.w.Close()
		}
		if err != nil {
			s.file.abort()
		} else {
			err = s.file.commit()
		}
	}
	s.w, s.chunks, s.rows, s.vals = nil, rowChunker{}, nil, nil
	if err != nil {
		return s.fail(err)
	}
	return nil
}

// finishEpochs closes the last part and writes every part's rows, in
// epoch order, into the final file, through a chunker at the final file's
// row positions: its writer's calls are those of a run without
// checkpoints, wherever the barriers fell.
func (s *parquetSink) finishEpochs() error {
	if err := s.closePart(); err != nil {
		return err
	}
	return s.epochs.combine(s.path, func(f *atomicFile) (func(string) error, func() error) {
		w := s.newWriter(f)
		s.chunks.reset(w, s.width)
		buf := make([]parquet.Row, parquetChunkRows)
		add := func(name string) error { return copyParquetRows(&s.chunks, buf, name) }
		end := func() error {
			if err := s.chunks.flush(); err != nil {
				return err
			}
			return w.Close()
		}
		return add, end
	})
}

// copyParquetRows appends the rows of the Parquet file name to c, read
// into buf (reused; its rows' values are valid until the next read).
func copyParquetRows(c *rowChunker, buf []parquet.Row, name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	for _, rg := range pf.RowGroups() {
		rows := rg.Rows()
		err := copyRows(c, buf, rows)
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// copyRows writes every row of rows to c, read len(buf) at a time.
func copyRows(c *rowChunker, buf []parquet.Row, rows parquet.Rows) error {
	for {
		n, err := rows.ReadRows(buf)
		if n > 0 {
			if werr := c.write(buf[:n]); werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// parquetChunkRows is the chunk size of rowChunker: 64 rows, a divisor
// of DefaultRowGroupRows (no chunk of a default row group straddles two
// row groups) and the slice the Parquet writer cuts every call into
// anyway, so chunks this small cost no extra calls into its columns,
// while a batch copies at most 2 × 63 of its rows into the carry.
const parquetChunkRows = 64

// rowChunker writes rows to a Parquet writer in chunks at fixed positions
// of the file: each WriteRows call covers rows [i·K, (i+1)·K) of the
// file's row index (K = parquetChunkRows), and flush writes the last,
// shorter chunk. The writer decides whether to cut a page after each call
// (and after each fixed-size slice of a call), so with calls at fixed
// positions the pages, hence the file's bytes, depend on the rows alone,
// not on how the caller batched them.
//
// The rows given to write are borrowed: a full chunk is written from them
// without a copy; the rest, a partial chunk, is copied into carry, the
// bytes of its byte-array values into arena, both reused (no allocation
// per row once they have grown to a chunk's size). Used by one goroutine.
type rowChunker struct {
	w     *parquet.Writer
	width int             // values per row (the schema's width)
	carry []parquet.Row   // the partial chunk: fewer than K rows, in vals
	vals  []parquet.Value // carry's values, width per row, K rows
	arena []byte          // the bytes of carry's byte-array values
}

// reset points c at w, a writer at the start of its file; c's carry must
// be empty (flushed). Keeps c's buffers.
func (c *rowChunker) reset(w *parquet.Writer, width int) {
	c.w, c.width = w, width
	if len(c.vals) != parquetChunkRows*width {
		c.carry = make([]parquet.Row, 0, parquetChunkRows)
		c.vals = make([]parquet.Value, parquetChunkRows*width)
	}
}

// write appends rows (borrowed: not used after it returns).
func (c *rowChunker) write(rows []parquet.Row) error {
	const k = parquetChunkRows
	if n := len(c.carry); n > 0 {
		take := min(k-n, len(rows))
		c.keep(rows[:take])
		rows = rows[take:]
		if len(c.carry) < k {
			return nil
		}
		if err := c.flush(); err != nil {
			return err
		}
	}
	full := len(rows) - len(rows)%k
	for i := 0; i < full; i += k {
		if _, err := c.w.WriteRows(rows[i : i+k]); err != nil {
			return err
		}
	}
	c.keep(rows[full:])
	return nil
}

// keep copies rows into the carry; there is room for them.
func (c *rowChunker) keep(rows []parquet.Row) {
	w := c.width
	for _, row := range rows {
		i := len(c.carry)
		dst := append(c.vals[i*w:i*w:(i+1)*w], row...)
		for j, v := range dst {
			if v.Kind() != parquet.ByteArray || v.IsNull() {
				continue
			}
			off := len(c.arena)
			c.arena = append(c.arena, v.ByteArray()...)
			// An earlier value keeps the arena's old array alive if the
			// append moved it.
			dst[j] = parquet.ByteArrayValue(c.arena[off:len(c.arena):len(c.arena)]).
				Level(v.RepetitionLevel(), v.DefinitionLevel(), v.Column())
		}
		c.carry = append(c.carry, dst)
	}
}

// flush writes the carry: the last chunk of an epoch's part at its
// barrier, or of the file at the end.
func (c *rowChunker) flush() error {
	if len(c.carry) == 0 {
		return nil
	}
	_, err := c.w.WriteRows(c.carry)
	clear(c.vals[:len(c.carry)*c.width])
	c.carry, c.arena = c.carry[:0], c.arena[:0]
	return err
}

// Abort removes the temporary file, or the open part (parts made durable
// by a barrier stay for a restore).
func (s *parquetSink) Abort() {
	if s.state == done {
		return
	}
	s.state = done
	if s.file != nil {
		s.file.abort()
	}
	s.epochs.dropOpen()
	s.w, s.chunks, s.rows, s.vals = nil, rowChunker{}, nil, nil
}

// orderedGroup is a Parquet group whose fields keep the order given
// (parquet.Group is a map and sorts its fields by name): the file's
// columns are the schema's, in order.
type orderedGroup []parquet.Field

func (g orderedGroup) ID() int                     { return 0 }
func (g orderedGroup) String() string              { return "group" }
func (g orderedGroup) Type() parquet.Type          { return parquet.Group{}.Type() }
func (g orderedGroup) Optional() bool              { return false }
func (g orderedGroup) Repeated() bool              { return false }
func (g orderedGroup) Required() bool              { return true }
func (g orderedGroup) Leaf() bool                  { return false }
func (g orderedGroup) Fields() []parquet.Field     { return g }
func (g orderedGroup) Encoding() encoding.Encoding { return nil }
func (g orderedGroup) Compression() compress.Codec { return nil }
func (g orderedGroup) GoType() reflect.Type        { return reflect.TypeFor[map[string]any]() }

// orderedField is a named field of an orderedGroup.
type orderedField struct {
	parquet.Node
	name string
}

func (f orderedField) Name() string { return f.name }

// Value is not used: rows are written as parquet.Row, never from Go
// values.
func (f orderedField) Value(reflect.Value) reflect.Value { return reflect.Value{} }
