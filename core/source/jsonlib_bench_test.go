package source

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/tidwall/gjson"
	"github.com/valyala/fastjson"

	"streamd/core"
)

// BenchmarkJSONParser is the paired benchmark that decides whether a kept
// JSON library replaces streamd's own parser: the same 200,000
// flights-like JSON lines (genJSONL), the same five fields (genFields),
// each line read from the same bufio.Reader and parsed into a row with
// the same typing and string interning; one op is one line. Run the
// variants alternately (-count with the sub-benchmarks interleaved) and
// compare ns/op and allocs/op: docs/PERFORMANCE-LOG.md, "JSON — library
// or ours".
func BenchmarkJSONParser(b *testing.B) {
	text := []byte(genJSONL(200_000))
	row := make([]core.Value, len(genFields))
	b.Run("streamd", func(b *testing.B) {
		r, err := newJSONLReader("bench", bytes.NewReader(nil), genFields, nil)
		if err != nil {
			b.Fatal(err)
		}
		benchLines(b, text, func(br *bufio.Reader) {
			r.reset(br, 0, nil)
			for {
				if _, err := r.read(row); err == io.EOF {
					return
				} else if err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	// Paths and explode: the same records as GeoJSON-like features, five
	// to a line under "features", fields by path; one op is one record.
	b.Run("streamd-paths-explode", func(b *testing.B) {
		var sb strings.Builder
		for i := range 40_000 {
			sb.WriteString(`{"type":"FeatureCollection","features":[`)
			for k := range 5 {
				if k > 0 {
					sb.WriteByte(',')
				}
				fmt.Fprintf(&sb, `{"properties":{"mag":%d.5,"place":"P%d"},"geometry":{"coordinates":[%d,%d,10]}}`, i%9, i%50, i%180, k)
			}
			sb.WriteString("]}\n")
		}
		opts := JSONOptions{Format: JSONLines, Explode: "features", Fields: []JSONField{
			{Field: core.Field{Name: "mag", Type: core.Float64}, Path: "properties.mag"},
			{Field: core.Field{Name: "place", Type: core.String}, Path: "properties.place"},
			{Field: core.Field{Name: "lat", Type: core.Int64}, Path: "geometry.coordinates[1]"},
		}}
		r, err := newJSONReader("json", "bench", bytes.NewReader(nil), opts, nil)
		if err != nil {
			b.Fatal(err)
		}
		row := make([]core.Value, 3)
		text := []byte(sb.String())
		benchRecords(b, text, 200_000, func(br *bufio.Reader) {
			r.reset(br, 0, nil)
			for {
				if _, err := r.read(row); err == io.EOF {
					return
				} else if err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("fastjson", func(b *testing.B) {
		var p fastjson.Parser
		str := []*interner{nil, nil, nil, newInterner(), newInterner()}
		benchLines(b, text, func(br *bufio.Reader) {
			for {
				line, err := br.ReadSlice('\n')
				if err == io.EOF {
					return
				}
				v, err := p.ParseBytes(line)
				if err != nil {
					b.Fatal(err)
				}
				for i, f := range genFields {
					x := v.Get(f.Name)
					if x == nil {
						b.Fatal("missing")
					}
					switch f.Type {
					case core.String:
						s, err := x.StringBytes()
						if err != nil {
							b.Fatal(err)
						}
						row[i] = core.StringValue(str[i].bytes(s))
					case core.Timestamp:
						s, err := x.StringBytes()
						if err != nil {
							b.Fatal(err)
						}
						ns, err := core.ParseTime(unsafe.String(unsafe.SliceData(s), len(s)))
						if err != nil {
							b.Fatal(err)
						}
						row[i] = core.TimeValue(ns)
					case core.Int64:
						n, err := x.Int64()
						if err != nil {
							b.Fatal(err)
						}
						row[i] = core.IntValue(n)
					}
				}
			}
		})
	})
	b.Run("gjson", func(b *testing.B) {
		str := []*interner{nil, nil, nil, newInterner(), newInterner()}
		paths := make([]string, len(genFields))
		for i, f := range genFields {
			paths[i] = f.Name
		}
		benchLines(b, text, func(br *bufio.Reader) {
			for {
				line, err := br.ReadSlice('\n')
				if err == io.EOF {
					return
				}
				if !gjson.ValidBytes(line) {
					b.Fatal("invalid")
				}
				for i, f := range genFields {
					x := gjson.GetBytes(line, paths[i])
					if !x.Exists() {
						b.Fatal("missing")
					}
					switch f.Type {
					case core.String:
						row[i] = core.StringValue(str[i].bytes(unsafe.Slice(unsafe.StringData(x.Str), len(x.Str))))
					case core.Timestamp:
						ns, err := core.ParseTime(x.Str)
						if err != nil {
							b.Fatal(err)
						}
						row[i] = core.TimeValue(ns)
					case core.Int64:
						row[i] = core.IntValue(x.Int())
					}
				}
			}
		})
	})
}

// benchLines times parse over text, one op a line, after a warm-up pass.
func benchLines(b *testing.B, text []byte, parse func(*bufio.Reader)) {
	benchRecords(b, text, bytes.Count(text, []byte{'\n'}), parse)
}

// benchRecords times parse over text, which holds lines records, one op
// a record, after a warm-up pass.
func benchRecords(b *testing.B, text []byte, lines int, parse func(*bufio.Reader)) {
	br := bufio.NewReaderSize(nil, readBufferSize)
	pass := func() {
		br.Reset(bytes.NewReader(text))
		parse(br)
	}
	pass()
	b.SetBytes(int64(len(text) / lines))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += lines {
		pass()
	}
	b.StopTimer()
}

// BenchmarkJSONArrayIndex measures the structural boundary pass of an
// array file (indexUnits, serial, at open) beside the parse of all its
// blocks by one worker (ReadBlock): 200,000 flights-like objects, an
// element a line, ~26 MB. One op is one pass over the file; compare ns/B.
func BenchmarkJSONArrayIndex(b *testing.B) {
	text := "[" + strings.ReplaceAll(strings.TrimSuffix(genJSONL(200_000), "\n"), "\n", ",\n") + "]\n"
	path := writeFile(b, "flights.json", text)
	opts := JSONOptions{Format: JSONArray, Fields: make([]JSONField, len(genFields))}
	for i, f := range genFields {
		opts.Fields[i].Field = f
	}
	b.Run("boundary-pass", func(b *testing.B) {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		for range b.N {
			if _, err := indexUnits(f, 0, 1, int64(len(text)), splitSize, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parse", func(b *testing.B) {
		src, err := JSON(path, opts, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer src.Close()
		s := src.(core.Splittable)
		pass := func() {
			for blk := range s.Blocks() {
				if err := s.ReadBlock(context.Background(), blk, nil, func(bt *core.Batch) error { bt.Release(); return nil }); err != nil {
					b.Fatal(err)
				}
			}
		}
		pass()
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			pass()
		}
	})
}
