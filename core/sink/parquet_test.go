package sink

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/parquet-go/parquet-go"
	pqformat "github.com/parquet-go/parquet-go/format"

	"streamd/core"
	"streamd/core/source"
	"streamd/internal/tier"
)

// manyRecords returns n records cycling through records()' edge values,
// with i made unique.
func manyRecords(n int) []rec {
	base := records()
	rs := make([]rec, n)
	for j := range rs {
		rs[j] = base[j%len(base)]
		rs[j].i = int64(j)
	}
	return rs
}

// readParquet reads path with streamd's Parquet source: the sink's output
// must be an input streamd reads back to the same values.
func readParquet(t *testing.T, path string) []rec {
	t.Helper()
	errs, err := core.NewErrorPolicy(core.Fail, "")
	if err != nil {
		t.Fatal(err)
	}
	src, err := source.Parquet(path, nil, errs)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if got := src.Schema().Fields; len(got) != 5 || got[0] != schema.Fields[0] || got[4] != schema.Fields[4] {
		t.Fatalf("read back schema %v, want %v", got, schema.Fields)
	}
	var out []rec
	for {
		b, err := src.Next(context.Background())
		if b == nil || err != nil {
			if err != nil && !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			return out
		}
		for r := range b.Len {
			row := b.Row(r)
			out = append(out, rec{row[0].Str(), row[1].Int(), row[2].Float(), row[3].Bool(), row[4].Time()})
		}
		b.Release()
	}
}

// The Parquet sink writes the schema's columns in order with their types,
// every edge value round-trips through streamd's own Parquet source, rows
// are cut into row groups of RowGroupRows, and the file's bytes depend on
// the records alone, not on how they were batched.
func TestParquetRoundTrip(t *testing.T) {
	dir := t.TempDir()
	rs := manyRecords(2500)
	one := filepath.Join(dir, "one.parquet")
	writeAll(t, Parquet(one, ParquetOptions{RowGroupRows: 1000}), schema, batchOf(schema, rs[:500]), batchOf(schema, rs[500:1000]), batchOf(schema, rs[1000:1500]), batchOf(schema, rs[1500:2000]), batchOf(schema, rs[2000:]))
	var batches []*core.Batch
	for i := 0; i < len(rs); i += 7 {
		batches = append(batches, batchOf(schema, rs[i:min(i+7, len(rs))]))
	}
	other := filepath.Join(dir, "other.parquet")
	writeAll(t, Parquet(other, ParquetOptions{RowGroupRows: 1000}), schema, batches...)

	got := readParquet(t, one)
	if len(got) != len(rs) {
		t.Fatalf("read %d rows, wrote %d", len(got), len(rs))
	}
	for i := range rs {
		if got[i] != rs[i] && !(got[i].f != got[i].f && rs[i].f != rs[i].f) {
			t.Fatalf("row %d: read %+v, wrote %+v", i, got[i], rs[i])
		}
	}
	a, b := readBytes(t, one), readBytes(t, other)
	if !bytes.Equal(a, b) {
		t.Fatalf("batches of 500 and of 7 gave different files (%d and %d bytes)", len(a), len(b))
	}
	f, sizes := rowGroupSizes(t, a)
	if len(sizes) != 3 || sizes[0] != 1000 || sizes[1] != 1000 || sizes[2] != 500 {
		t.Errorf("row groups %v, want [1000 1000 500]", sizes)
	}
	cols := f.Schema().Columns()
	var names []string
	for _, c := range cols {
		names = append(names, strings.Join(c, "."))
	}
	if strings.Join(names, ",") != "s,i,f,b,t" {
		t.Errorf("columns %v, want s,i,f,b,t", names)
	}
	lt := f.Schema().Fields()[4].Type().LogicalType()
	if ts, ok := lt.Value.(*pqformat.TimestampType); !ok || !ts.IsAdjustedToUTC || ts.Unit.String() != "NANOS" {
		t.Errorf("t's logical type %v, want TIMESTAMP(NANOS, UTC)", lt)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("%d files in the directory, want the 2 outputs (no temporary files)", len(ents))
	}
}

func readBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// In exactly-once mode each epoch is a complete Parquet part; a crash
// after barrier 2 and a restore from checkpoint 1 (barrier 2's part and
// the open part discarded, their records written again) gives a final
// file byte-identical to a run without checkpoints, whatever the epochs'
// sizes; a damaged part is refused by VerifyOutput.
func TestParquetEpochsExactlyOnce(t *testing.T) {
	dir := t.TempDir()
	rs := manyRecords(3000)
	opts := ParquetOptions{RowGroupRows: 1024, Compression: "zstd"}
	ref := filepath.Join(dir, "ref.parquet")
	writeAll(t, Parquet(ref, opts), schema, batchOf(schema, rs))

	path := filepath.Join(dir, "out.parquet")
	k := Parquet(path, opts).(core.EpochSink)
	if err := k.OpenEpochs(schema, 0); err != nil {
		t.Fatal(err)
	}
	write := func(k core.EpochSink, from, to int) {
		t.Helper()
		b := batchOf(schema, rs[from:to])
		if err := k.Write(b); err != nil {
			t.Fatal(err)
		}
		b.Release()
	}
	write(k, 0, 700)
	if err := k.Barrier(1); err != nil {
		t.Fatal(err)
	}
	manifest1 := append([]byte(nil), k.(core.OutputManifest).Manifest()...)
	write(k, 700, 1900)
	if err := k.Barrier(2); err != nil {
		t.Fatal(err)
	}
	write(k, 1900, 2100)
	k.Abort() // the crash: epoch 3's open part goes, epoch 2's stays on disk
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("final file exists after abort: %v", err)
	}

	k = Parquet(path, opts).(core.EpochSink)
	if err := k.(core.OutputManifest).VerifyOutput(manifest1, 1); err != nil {
		t.Fatal(err)
	}
	if err := k.OpenEpochs(schema, 1); err != nil {
		t.Fatal(err)
	}
	write(k, 700, 1000)
	if err := k.Barrier(2); err != nil {
		t.Fatal(err)
	}
	write(k, 1000, 3000)
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readBytes(t, path), readBytes(t, ref)) {
		t.Fatal("the restored run's file differs from the run without checkpoints")
	}
	if _, err := os.Stat(path + ".parts"); !os.IsNotExist(err) {
		t.Errorf("parts directory left: %v", err)
	}

	// A part changed after its checkpoint is found.
	k = Parquet(path, opts).(core.EpochSink)
	k.OpenEpochs(schema, 0)
	write(k, 0, 100)
	k.Barrier(1)
	m := append([]byte(nil), k.(core.OutputManifest).Manifest()...)
	k.Abort()
	part := filepath.Join(path+".parts", partName(1))
	data := readBytes(t, part)
	data[len(data)/2] ^= 1
	os.WriteFile(part, data, 0o644)
	err := Parquet(path, opts).(core.OutputManifest).VerifyOutput(m, 1)
	if !errors.Is(err, core.ErrOutputDamaged) {
		t.Fatalf("damaged part: %v", err)
	}
}

// pageRecords returns n records whose strings vary in content and
// length: at n = 200,000 every column fills several pages of 256 KiB.
func pageRecords(n int) []rec {
	rs := manyRecords(n)
	for j := range rs {
		rs[j].s = fmt.Sprintf("%s-%d", rs[j].s, j*j%99991)
	}
	return rs
}

// writeSplit writes rs to k (opened) in batches of the sizes next
// returns, cut at the row counts in barriers, after which it calls
// k.Barrier (k is then a core.EpochSink) with epochs 1, 2, …. A batch is
// borrowed: the strings of each are in one buffer the next batch
// overwrites, as a batch's memory is reused once Write has returned.
func writeSplit(t *testing.T, k core.Sink, rs []rec, next func() int, barriers []int) {
	t.Helper()
	var buf []byte
	epoch := uint64(0)
	for done := 0; done < len(rs) || len(barriers) > 0; {
		for len(barriers) > 0 && barriers[0] == done {
			epoch++
			if err := k.(core.EpochSink).Barrier(epoch); err != nil {
				t.Fatal(err)
			}
			barriers = barriers[1:]
		}
		if done == len(rs) {
			break
		}
		end := min(done+max(next(), 1), len(rs))
		if len(barriers) > 0 {
			end = min(end, barriers[0])
		}
		buf = buf[:0]
		for _, r := range rs[done:end] {
			buf = append(buf, r.s...)
		}
		b := core.NewBatch(schema)
		off := 0
		for _, r := range rs[done:end] {
			str := unsafe.String(unsafe.SliceData(buf[off:]), len(r.s))
			off += len(r.s)
			row := b.Append(0, 0, core.NoTime, 0)
			row[0], row[1], row[2], row[3], row[4] = core.StringValue(str), core.IntValue(r.i), core.FloatValue(r.f), core.BoolValue(r.b), core.TimeValue(r.t)
		}
		if err := k.Write(b); err != nil {
			t.Fatal(err)
		}
		b.Release()
		for j := range buf {
			buf[j] = '#' // the batch's memory is gone
		}
		done = end
	}
}

// The same records give the same bytes however they are cut into
// batches (one batch, one per record, fixed and random sizes), and in
// exactly-once mode wherever the barriers fall: with rows enough for
// several pages per column, the pages do not follow the batches. The
// rows are cut into row groups of exactly the configured size. The long
// tier writes 200,000 rows with the defaults (DefaultRowGroupRows,
// parquet-go's 256 KiB pages); the fast one 20,000 rows in row groups of
// 12,288 and 4 KiB pages, as many pages and row groups for a tenth of the
// rows.
func TestParquetBatchSplits(t *testing.T) {
	dir := t.TempDir()
	n := tier.Pick(20_000, 200_000)
	opts := tier.Pick(ParquetOptions{RowGroupRows: 12_288, pageBytes: 4 << 10}, ParquetOptions{})
	group := cmp.Or(opts.RowGroupRows, DefaultRowGroupRows)
	rs := pageRecords(n)
	rnd := rand.New(rand.NewPCG(1, 2))
	plain := func(name string, next func() int) []byte {
		p := filepath.Join(dir, name+".parquet")
		k := Parquet(p, opts)
		if err := k.Open(schema); err != nil {
			t.Fatal(err)
		}
		writeSplit(t, k, rs, next, nil)
		if err := k.Close(); err != nil {
			t.Fatal(err)
		}
		return readBytes(t, p)
	}
	epochs := func(name string, next func() int, barriers []int) []byte {
		p := filepath.Join(dir, name+".parquet")
		k := Parquet(p, opts).(core.EpochSink)
		if err := k.OpenEpochs(schema, 0); err != nil {
			t.Fatal(err)
		}
		writeSplit(t, k, rs, next, barriers)
		if err := k.Close(); err != nil {
			t.Fatal(err)
		}
		return readBytes(t, p)
	}
	fixed := func(n int) func() int { return func() int { return n } }
	random := func(hi int) func() int { return func() int { return 1 + rnd.IntN(hi) } }

	ref := plain("one-batch", fixed(len(rs)))
	f, sizes := rowGroupSizes(t, ref)
	if len(sizes) != 2 || sizes[0] != group || sizes[1] != int64(n)-group {
		t.Fatalf("row groups %v, want [%d %d]", sizes, group, int64(n)-group)
	}
	for c, cc := range f.RowGroups()[0].ColumnChunks() {
		oi, err := cc.OffsetIndex()
		if err != nil {
			t.Fatal(err)
		}
		if c != 3 && oi.NumPages() < 3 { // b, a bit per row, fits a page
			t.Fatalf("column %d: %d pages in the first row group, want several", c, oi.NumPages())
		}
	}
	if got := readParquet(t, filepath.Join(dir, "one-batch.parquet")); len(got) != len(rs) || got[0] != rs[0] || got[len(rs)-1] != rs[len(rs)-1] || got[n*5/8] != rs[n*5/8] {
		t.Fatalf("read back %d rows, wrote %d, or they differ", len(got), len(rs))
	}
	for _, c := range []struct {
		name string
		file func() []byte
	}{
		{"one per record", func() []byte { return plain("per-record", fixed(1)) }},
		{"batches of 7", func() []byte { return plain("seven", fixed(7)) }},
		{"batches of core.BatchSize", func() []byte { return plain("batch-size", fixed(core.BatchSize)) }},
		{"random batches up to 3000", func() []byte { return plain("random", random(3000)) }},
		{"random batches up to 100", func() []byte { return plain("random-small", random(100)) }},
		{"epochs at odd positions", func() []byte {
			return epochs("epochs-odd", random(2000), []int{1, 700, 1024, 1025, 1025, n/2 - 1, int(group) + 1, n - 1, n})
		}},
		{"epochs at random positions", func() []byte {
			var bs []int
			for at := rnd.IntN(n * 3 / 20); at < len(rs); at += 1 + rnd.IntN(n*3/20) {
				bs = append(bs, at)
			}
			return epochs("epochs-random", random(700), bs)
		}},
		{"one epoch", func() []byte { return epochs("epochs-one", fixed(core.BatchSize), nil) }},
	} {
		if got := c.file(); !bytes.Equal(got, ref) {
			t.Errorf("%s: the file differs from one batch's (%d and %d bytes)", c.name, len(got), len(ref))
		}
	}
}

// Options are checked at Open.
func TestParquetOptions(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		opts ParquetOptions
		want string
	}{
		{ParquetOptions{Compression: "brotli"}, `unknown compression "brotli"`},
		{ParquetOptions{RowGroupRows: -1}, "negative"},
	} {
		err := Parquet(filepath.Join(dir, "x.parquet"), c.opts).Open(schema)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.opts, err, c.want)
		}
	}
	for _, name := range []string{"", "snappy", "zstd", "gzip", "lz4", "none"} {
		p := filepath.Join(dir, "c-"+name+".parquet")
		writeAll(t, Parquet(p, ParquetOptions{Compression: name}), schema, batchOf(schema, records()))
		if got := readParquet(t, p); len(got) != len(records()) || got[3] != records()[3] {
			t.Errorf("%q: read back %d rows", name, len(got))
		}
	}
}

// Writing a batch allocates nothing per record: batches of
// core.BatchSize records (whole chunks of the file's rows), and of 509 (a
// filter's output: every batch leaves a partial chunk to the next).
func BenchmarkParquetWrite(b *testing.B) {
	for _, n := range []int{core.BatchSize, 509} {
		b.Run(fmt.Sprint("batch-", n), func(b *testing.B) {
			k := Parquet(filepath.Join(b.TempDir(), "b.parquet"), ParquetOptions{})
			if err := k.Open(schema); err != nil {
				b.Fatal(err)
			}
			batch := batchOf(schema, manyRecords(n))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := k.Write(batch); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
			k.Abort()
		})
	}
}

// A Nullable field is an optional column: its nulls are Parquet nulls
// (definition level 0) and read back as nulls, not as the bits of the
// null value; a value beside them reads back as itself.
func TestParquetNullableColumns(t *testing.T) {
	s := core.MustSchema(core.Field{Name: "k", Type: core.String},
		core.Field{Name: "x", Type: core.Float64, Nullable: true},
		core.Field{Name: "n", Type: core.Int64, Nullable: true})
	b := core.NewBatch(s)
	for i := range 6 {
		row := b.Append(0, 0, core.NoTime, 0)
		row[0], row[1], row[2] = core.StringValue(fmt.Sprint("k", i)), core.FloatValue(float64(i)/2), core.IntValue(int64(i))
		if i%2 == 1 {
			row[1] = core.Null()
		}
		if i%3 == 0 {
			row[2] = core.Null()
		}
	}
	p := filepath.Join(t.TempDir(), "n.parquet")
	writeAll(t, Parquet(p, ParquetOptions{}), s, b)
	errs, _ := core.NewErrorPolicy(core.Fail, "")
	src, err := source.Parquet(p, nil, errs)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if fs := src.Schema().Fields; !fs[1].Nullable || !fs[2].Nullable || fs[0].Nullable {
		t.Fatalf("read back schema %v: x and n nullable, k not", fs)
	}
	got, err := src.Next(context.Background())
	if err != nil || got.Len != 6 {
		t.Fatalf("%v, %v", got, err)
	}
	for i := range 6 {
		row := got.Row(i)
		if row[1].IsNull() != (i%2 == 1) || (i%2 == 0 && row[1].Float() != float64(i)/2) {
			t.Errorf("row %d: x %v", i, row[1])
		}
		if row[2].IsNull() != (i%3 == 0) || (i%3 != 0 && row[2].Int() != int64(i)) {
			t.Errorf("row %d: n %v", i, row[2])
		}
	}
}

// rowGroupSizes opens the Parquet file held in data and returns it with
// the row count of each of its row groups.
func rowGroupSizes(t *testing.T, data []byte) (*parquet.File, []int64) {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int64
	for _, rg := range f.RowGroups() {
		sizes = append(sizes, rg.NumRows())
	}
	return f, sizes
}
