package source

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"streamd/core"
)

// BenchmarkTextIndex measures the serial pass that finds the blocks of a
// file (textIndex), in bytes/s: a flights-like CSV file of 200,000
// records (about 12 MB, a quoted multi-line field every 13th record), the
// same with every field quoted (a quote every few bytes: the pass's worst
// ordinary case), and JSON lines. Beside it, BenchmarkCSVFile/sequential
// and BenchmarkTextReadBlock are the parse it saves the workers from
// repeating.
func BenchmarkTextIndex(b *testing.B) {
	plain := genCSV(200_000, 0)
	quoted := quoteAll(plain)
	for _, bc := range []struct {
		name, content string
		csv           bool
	}{{"csv", plain, true}, {"csv-all-quoted", quoted, true}, {"jsonl", genJSONL(200_000), false}} {
		path := writeFile(b, bc.name, bc.content)
		b.Run(bc.name, func(b *testing.B) {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			end := int64(len(bc.content))
			b.SetBytes(end)
			b.ReportAllocs()
			for range b.N {
				var x *textIndex
				if bc.csv {
					fr := newCSVFrame(',', 0, 0)
					x, err = indexCSV(f, 0, 1, end, &fr, splitSize)
				} else {
					x, err = indexLines(f, 0, 1, end, splitSize)
				}
				if err != nil || x.blocks() != int((end+splitSize-1)/splitSize) {
					b.Fatalf("%v, %d blocks", err, x.blocks())
				}
			}
		})
	}
}

// quoteAll quotes every field of genCSV's records (the quoted notes
// already are).
func quoteAll(s string) string {
	lines := strings.SplitAfter(s, "\n")
	var sb strings.Builder
	for _, l := range lines {
		if strings.Count(l, "\"")%2 != 0 || strings.HasSuffix(l, "left\"\n") { // inside a multi-line note
			sb.WriteString(l)
			continue
		}
		fields := strings.Split(strings.TrimSuffix(l, "\n"), ",")
		for i, f := range fields {
			if i > 0 {
				sb.WriteByte(',')
			}
			if f != "" && !strings.HasPrefix(f, "\"") {
				f = "\"" + f + "\""
			}
			sb.WriteString(f)
		}
		if strings.HasSuffix(l, "\n") {
			sb.WriteByte('\n')
		}
	}
	return sb.String()
}

// genJSONL returns n JSON lines of the fields of genFields.
func genJSONL(n int) string {
	var sb strings.Builder
	codes := []string{"LAS", "PHL", "ATL", "SFO", "JFK", "ORD", "BOS", "DEN"}
	for i := range n {
		fmt.Fprintf(&sb, "{\"date\":\"2001-01-%02dT%02d:%02d:00Z\",\"delay\":%d,\"distance\":%d,\"origin\":\"%s\",\"destination\":\"%s\"}\n",
			1+i%28, i%24, i%60, i%97-20, 100+i%3000, codes[i%8], codes[(i/8)%8])
	}
	return sb.String()
}

// BenchmarkTextReadBlock reads every block of a CSV and a JSON-lines file
// (200,000 records, 12 blocks of 1 MiB) with ReadBlock, one worker; one op
// is one pass. allocs/record is what the steady state costs per record:
// JSONL none; CSV the one string encoding/csv makes of each record (as
// Next), plus a few allocations per block (a Reader, the section).
func BenchmarkTextReadBlock(b *testing.B) {
	csvPath := writeFile(b, "flights.csv", genCSV(200_000, 0))
	jsonlPath := writeFile(b, "flights.jsonl", genJSONL(200_000))
	for _, bc := range []struct {
		name string
		open func() (core.Source, error)
	}{
		{"csv", func() (core.Source, error) {
			return CSV(csvPath, CSVOptions{Header: true, Columns: genFields, Parallelism: 1}, nil)
		}},
		{"jsonl", func() (core.Source, error) { return JSONL(jsonlPath, genFields, nil, nil, nil) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			src, err := bc.open()
			if err != nil {
				b.Fatal(err)
			}
			defer src.Close()
			s := src.(core.Splittable)
			var records int64
			pass := func() {
				for blk := range s.Blocks() {
					err := s.ReadBlock(context.Background(), blk, nil, func(bt *core.Batch) error {
						records += int64(bt.Len)
						bt.Release()
						return nil
					})
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			pass() // the interners and the batch pool warm up
			records = 0
			st, _ := os.Stat(csvPath)
			if bc.name == "jsonl" {
				st, _ = os.Stat(jsonlPath)
			}
			b.SetBytes(st.Size())
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				pass()
			}
			b.StopTimer()
			if records != int64(b.N)*200_000 {
				b.Fatalf("%d records in %d passes", records, b.N)
			}
			ms := testing.AllocsPerRun(1, pass)
			b.ReportMetric(ms/200_000, "allocs/record")
			b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
