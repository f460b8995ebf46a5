package source

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"streamd/core"
)

var ctx = context.Background()

// drain reads a source to the end and returns its records as rows (copied)
// and positions.
func drain(t testing.TB, s core.Source) (rows [][]core.Value, pos []int64) {
	t.Helper()
	for {
		b, err := s.Next(ctx)
		if err == io.EOF {
			return rows, pos
		}
		if err != nil {
			t.Fatal(err)
		}
		if b.Len == 0 {
			t.Fatal("Next returned an empty batch")
		}
		for i := 0; i < b.Len; i++ {
			rows = append(rows, append([]core.Value(nil), b.Row(i)...))
			pos = append(pos, b.Pos[i])
			if b.Seq[i] != 0 || b.Hash[i] != 0 || b.Time[i] != core.NoTime {
				t.Fatalf("record %d: Seq/Hash/Time set by the source", i)
			}
		}
		b.Release()
	}
}

func ts(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UnixNano()
}

func TestParquetFlights(t *testing.T) {
	s, err := Parquet(dataFile(t, "flights-3m.parquet"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, want := s.Schema().String(), "(date timestamp, delay int64, distance int64, origin string, destination string)"; got != want {
		t.Fatalf("schema %s, want %s", got, want)
	}
	if s.Size() != 3_000_000 {
		t.Fatalf("Size %d", s.Size())
	}
	var n int64
	var last []core.Value
	minDelay, maxDelay := int64(1<<62), int64(-1<<62)
	prevDate := int64(core.NoTime)
	for {
		b, err := s.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			checkRow(t, b.Row(0), ts("2001-01-01T00:01:00Z"), 33, 2176, "LAS", "PHL")
		}
		for i := 0; i < b.Len; i++ {
			n++
			if b.Pos[i] != n {
				t.Fatalf("record %d has Pos %d", n, b.Pos[i])
			}
			r := b.Row(i)
			if r[0].Time() < prevDate {
				t.Fatalf("row %d: date %d before %d (the file is sorted by date)", n, r[0].Time(), prevDate)
			}
			prevDate = r[0].Time()
			minDelay, maxDelay = min(minDelay, r[1].Int()), max(maxDelay, r[1].Int())
		}
		last = append(last[:0], b.Row(b.Len-1)...)
		b.Release()
	}
	if n != 3_000_000 {
		t.Fatalf("read %d rows, want 3,000,000", n)
	}
	checkRow(t, last, ts("2001-07-01T00:00:00Z"), 33, 373, "ATL", "CVG")
	if minDelay != -1116 || maxDelay != 1688 {
		t.Fatalf("delay range %d … %d, want -1116 … 1688", minDelay, maxDelay)
	}
	if _, err := s.Next(ctx); err != io.EOF {
		t.Fatalf("Next after the end: %v, want io.EOF", err)
	}
}

func checkRow(t *testing.T, r []core.Value, date, delay, distance int64, origin, dest string) {
	t.Helper()
	if r[0].Time() != date || r[1].Int() != delay || r[2].Int() != distance || r[3].Str() != origin || r[4].Str() != dest {
		t.Fatalf("row (%s, %d, %d, %s, %s), want (%s, %d, %d, %s, %s)",
			time.Unix(0, r[0].Time()).UTC().Format(time.RFC3339), r[1].Int(), r[2].Int(), r[3].Str(), r[4].Str(),
			time.Unix(0, date).UTC().Format(time.RFC3339), delay, distance, origin, dest)
	}
}

func TestParquetSelectColumns(t *testing.T) {
	s, err := Parquet(dataFile(t, "flights-3m.parquet"), []string{"origin", "delay"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, want := s.Schema().String(), "(origin string, delay int64)"; got != want {
		t.Fatalf("schema %s, want %s", got, want)
	}
	b, err := s.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	if r := b.Row(0); r[0].Str() != "LAS" || r[1].Int() != 33 || b.Len != core.BatchSize {
		t.Fatalf("first row %q %d, batch of %d", r[0].Str(), r[1].Int(), b.Len)
	}
}

func TestParquetErrors(t *testing.T) {
	flights := dataFile(t, "flights-3m.parquet")
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.parquet")
	os.WriteFile(empty, nil, 0o644)
	garbage := filepath.Join(dir, "garbage.parquet")
	os.WriteFile(garbage, []byte("PAR1 this is not a parquet file at all PAR1"), 0o644)
	truncated := filepath.Join(dir, "truncated.parquet")
	head, _ := os.ReadFile(flights)
	os.WriteFile(truncated, head[:1<<20], 0o644)

	for _, tc := range []struct {
		name, path string
		columns    []string
		want       []string
	}{
		{"missing", filepath.Join(dir, "nope.parquet"), nil, []string{"nope.parquet", "no such file"}},
		{"empty", empty, nil, []string{empty, "empty file"}},
		{"garbage", garbage, nil, []string{garbage, "not a readable parquet file"}},
		{"truncated", truncated, nil, []string{truncated, "not a readable parquet file"}},
		{"directory", dir, nil, []string{dir, "directory"}},
		{"unknown column", flights, []string{"delay", "arrival"}, []string{`no column "arrival"`, "columns: date, delay, distance, origin, destination"}},
		{"duplicate column", flights, []string{"delay", "delay"}, []string{`"delay" appears twice`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parquet(tc.path, tc.columns, nil)
			if err == nil {
				s.Close()
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// typed is a record with every supported Parquet type, for round trips
// through parquet-go's writer.
type typed struct {
	I32  int32     `parquet:"i32"`
	I64  int64     `parquet:"i64,plain"`
	U32  uint32    `parquet:"u32"`
	F32  float32   `parquet:"f32"`
	F64  float64   `parquet:"f64"`
	B    bool      `parquet:"b"`
	Dict string    `parquet:"dict,dict"`
	S    string    `parquet:"s"`
	Ms   time.Time `parquet:"ms,timestamp(millisecond)"`
	Us   time.Time `parquet:"us,timestamp(microsecond)"`
	Ns   time.Time `parquet:"ns,timestamp(nanosecond)"`
	Day  int32     `parquet:"day,date"` // days since the epoch (time.Time with date does not round-trip in parquet-go v0.32)
	Opt  *int64    `parquet:"opt,optional"`
	OptS *string   `parquet:"opts,optional,dict"`
}

func typedRow(i int) typed {
	base := time.Date(2024, 2, 29, 12, 0, 0, 0, time.UTC)
	s := strings.Repeat("é", i%4) + "x" + string(rune('a'+i%26))
	o := int64(i * 7)
	r := typed{
		I32: int32(i) - 1000, I64: int64(i) << 33, U32: uint32(1<<31 + i), F32: float32(i) / 4, F64: float64(i) * 1.5,
		B: i%3 == 0, Dict: []string{"LAS", "PHL", "ATL"}[i%3], S: s,
		Ms: base.Add(time.Duration(i) * time.Millisecond), Us: base.Add(time.Duration(i) * time.Microsecond),
		Ns: base.Add(time.Duration(i)), Day: int32(base.Unix()/86400 + int64(i%10)),
		Opt: &o, OptS: &s,
	}
	return r
}

func writeTyped(t *testing.T, rows []typed, opts ...parquet.WriterOption) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "typed.parquet")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[typed](f, opts...)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParquetTypes(t *testing.T) {
	const n = 5000
	rows := make([]typed, n)
	for i := range rows {
		rows[i] = typedRow(i)
	}
	// Small pages and row groups: page and row-group boundaries fall inside
	// batches, at different rows for different columns.
	p := writeTyped(t, rows, parquet.PageBufferSize(1000), parquet.MaxRowsPerRowGroup(1234))
	s, err := Parquet(p, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := "(i32 int64, i64 int64, u32 int64, f32 float64, f64 float64, b bool, dict string, s string, ms timestamp, us timestamp, ns timestamp, day timestamp, opt int64, opts string)"
	if got := s.Schema().String(); got != want {
		t.Fatalf("schema %s\nwant %s", got, want)
	}
	got, pos := drain(t, s)
	if len(got) != n {
		t.Fatalf("%d rows, want %d", len(got), n)
	}
	for i, r := range got {
		w := rows[i]
		if pos[i] != int64(i+1) {
			t.Fatalf("row %d: Pos %d", i, pos[i])
		}
		ok := r[0].Int() == int64(w.I32) && r[1].Int() == w.I64 && r[2].Int() == int64(w.U32) &&
			r[3].Float() == float64(w.F32) && r[4].Float() == w.F64 && r[5].Bool() == w.B &&
			r[6].Str() == w.Dict && r[7].Str() == w.S &&
			r[8].Time() == w.Ms.UnixNano() && r[9].Time() == w.Us.UnixNano() && r[10].Time() == w.Ns.UnixNano() &&
			r[11].Time() == int64(w.Day)*86400e9 && r[12].Int() == *w.Opt && r[13].Str() == *w.OptS
		if !ok {
			t.Fatalf("row %d: got %v\nwant %+v", i, r, w)
		}
	}
}

func TestParquetNoRows(t *testing.T) {
	s, err := Parquet(writeTyped(t, nil), []string{"s", "i32"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Next(ctx); err != io.EOF || s.Size() != 0 {
		t.Fatalf("empty file: %v, size %d", err, s.Size())
	}
}

// TestParquetNulls: an optional column that holds nulls is Nullable and
// its nulls are core.Null, in every row, with no malformed record; an
// optional column without nulls (its statistics say so) is not Nullable,
// nor is a required one.
func TestParquetNulls(t *testing.T) {
	rows := make([]typed, 2000)
	for i := range rows {
		rows[i] = typedRow(i)
		if i%100 == 7 {
			rows[i].Opt = nil
		}
		if i%300 == 8 {
			rows[i].OptS = nil
		}
	}
	p := writeTyped(t, rows, parquet.PageBufferSize(500))

	errs, _ := core.NewErrorPolicy(core.Fail, "")
	s, err := Parquet(p, []string{"opt", "i32", "opts"}, errs)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Schema().String(), "(opt int64 null, i32 int64, opts string null)"; got != want {
		t.Fatalf("schema %s, want %s", got, want)
	}
	got, pos := drain(t, s)
	s.Close()
	if len(got) != 2000 || errs.Skipped.Load() != 0 {
		t.Fatalf("%d rows, %d skipped; want 2000, 0", len(got), errs.Skipped.Load())
	}
	nulls := 0
	for i, r := range got {
		w := rows[pos[i]-1]
		okOpt := w.Opt == nil && r[0].IsNull() || w.Opt != nil && !r[0].IsNull() && r[0].Int() == *w.Opt
		okOptS := w.OptS == nil && r[2].IsNull() || w.OptS != nil && !r[2].IsNull() && r[2].Str() == *w.OptS
		if !okOpt || !okOptS || r[1].IsNull() || r[1].Int() != int64(w.I32) {
			t.Fatalf("row at pos %d: %v", pos[i], r)
		}
		if r[0].IsNull() {
			nulls++
		}
		if r[2].IsNull() {
			nulls++
		}
	}
	if nulls != 27 {
		t.Fatalf("%d nulls, want 27", nulls)
	}

	// The same columns of a file without nulls: not Nullable.
	full := make([]typed, 300)
	for i := range full {
		full[i] = typedRow(i)
	}
	s, err = Parquet(writeTyped(t, full), []string{"opt", "i32", "opts"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, want := s.Schema().String(), "(opt int64, i32 int64, opts string)"; got != want {
		t.Fatalf("complete file: schema %s, want %s", got, want)
	}
}

func TestParquetCorruptPage(t *testing.T) {
	rows := make([]typed, 3000)
	for i := range rows {
		rows[i] = typedRow(i)
	}
	p := writeTyped(t, rows)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// Overwrite the column data (not the footer) with noise.
	for i := 4; i < len(data)/2; i++ {
		data[i] = byte(i*131 + 7)
	}
	os.WriteFile(p, data, 0o644)
	s, err := Parquet(p, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for {
		b, err := s.Next(ctx)
		if err == io.EOF {
			t.Fatal("a corrupt file read to the end without error")
		}
		if err != nil {
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		b.Release()
	}
}

func TestParquetCtxAndClose(t *testing.T) {
	s, err := Parquet(dataFile(t, "flights-3m.parquet"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Next(c); err != context.Canceled {
		t.Fatalf("Next with a done ctx: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Next(ctx); err == nil {
		t.Fatal("Next after Close: no error")
	}
}

// BenchmarkParquet reads the flights file; one op is one batch of
// core.BatchSize records, so allocs/op is allocations per batch (page
// buffers and dictionaries amortised over the batches of a row group).
func BenchmarkParquet(b *testing.B) {
	path := dataFile(b, "flights-3m.parquet")
	open := func() *ParquetSource {
		s, err := Parquet(path, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	s := open()
	var records int64
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		batch, err := s.Next(ctx)
		if err == io.EOF {
			b.StopTimer()
			s.Close()
			s = open()
			b.StartTimer()
			batch, err = s.Next(ctx)
		}
		if err != nil {
			b.Fatal(err)
		}
		records += int64(batch.Len)
		batch.Release()
	}
	b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
	s.Close()
}
