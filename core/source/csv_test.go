package source

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"streamd/core"
)

func writeFile(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

var flightFields = []core.Field{
	{Name: "date", Type: core.Timestamp},
	{Name: "delay", Type: core.Int64},
	{Name: "origin", Type: core.String},
	{Name: "ok", Type: core.Bool},
	{Name: "ratio", Type: core.Float64},
}

const flightsCSV = "origin,date,delay,ratio,ok,extra\n" +
	"LAS,2001-01-01T00:01:00Z,33,0.5,true,x\n" +
	"\n" +
	"\"PH,L\",2001-01-01 00:02:00,-5,1e3,false,\"multi\nline\"\n" +
	"\"A\"\"TL\",2001-01-02,0,-0.25,1,y\n" +
	"LAS,978307260000000000,7,2,F,z"

func TestCSVTyped(t *testing.T) {
	p := writeFile(t, "flights.csv", flightsCSV)
	s, err := CSV(p, CSVOptions{Header: true, Columns: flightFields}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, want := s.Schema().String(), "(date timestamp, delay int64, origin string, ok bool, ratio float64)"; got != want {
		t.Fatalf("schema %s, want %s", got, want)
	}
	rows, pos := drain(t, s)
	want := []struct {
		date   string
		delay  int64
		origin string
		ok     bool
		ratio  float64
		line   int64
	}{
		{"2001-01-01T00:01:00Z", 33, "LAS", true, 0.5, 2},
		{"2001-01-01T00:02:00Z", -5, "PH,L", false, 1000, 4},
		{"2001-01-02T00:00:00Z", 0, "A\"TL", true, -0.25, 6},
		{"2001-01-01T00:01:00Z", 7, "LAS", false, 2, 7},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i, w := range want {
		r := rows[i]
		if r[0].Time() != ts(w.date) || r[1].Int() != w.delay || r[2].Str() != w.origin || r[3].Bool() != w.ok || r[4].Float() != w.ratio || pos[i] != w.line {
			t.Errorf("row %d: %v at line %d, want %+v", i, r, pos[i], w)
		}
	}
	// Equal strings share one allocation (interned).
	if unsafe.StringData(rows[0][2].Str()) != unsafe.StringData(rows[3][2].Str()) {
		t.Error("repeated string not interned")
	}
}

func TestCSVHeaderOnlyAndEmpty(t *testing.T) {
	s, err := CSV(writeFile(t, "h.csv", "a,b\n"), CSVOptions{Header: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Schema().String(); got != "(a string, b string)" {
		t.Fatalf("schema %s", got)
	}
	if _, err := s.Next(ctx); err != io.EOF {
		t.Fatalf("header only: %v, want io.EOF", err)
	}
	s.Close()

	_, err = CSV(writeFile(t, "e.csv", ""), CSVOptions{Header: true}, nil)
	if err == nil || !strings.Contains(err.Error(), "empty input: no header") {
		t.Fatalf("empty input: %v", err)
	}
	s, err = CSV(writeFile(t, "e.csv", ""), CSVOptions{Columns: flightFields[:1]}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Next(ctx); err != io.EOF {
		t.Fatalf("empty input without header: %v, want io.EOF", err)
	}
	s.Close()
}

func TestCSVNoHeader(t *testing.T) {
	in := "1;x\n2;\"y;z\"\n"
	s, err := CSV("", CSVOptions{Delimiter: ';', Reader: strings.NewReader(in),
		Columns: []core.Field{{Name: "n", Type: core.Int64}, {Name: "s", Type: core.String}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, pos := drain(t, s)
	if len(rows) != 2 || rows[1][0].Int() != 2 || rows[1][1].Str() != "y;z" || pos[0] != 1 || pos[1] != 2 {
		t.Fatalf("rows %v at %v", rows, pos)
	}
}

func TestCSVConfigErrors(t *testing.T) {
	p := writeFile(t, "f.csv", "a,b\n1,2\n")
	for _, tc := range []struct {
		name string
		path string
		opts CSVOptions
		want string
	}{
		{"missing file", filepath.Join(t.TempDir(), "nope.csv"), CSVOptions{Header: true}, "nope.csv: no such file"},
		{"no columns", p, CSVOptions{}, "no header and no columns"},
		{"bad delimiter", p, CSVOptions{Header: true, Delimiter: '"'}, "invalid delimiter"},
		{"unknown column", p, CSVOptions{Header: true, Columns: []core.Field{{Name: "c", Type: core.Int64}}}, `no column "c" in the header (columns: a, b)`},
		{"duplicate header", writeFile(t, "d.csv", "a,a\n"), CSVOptions{Header: true}, `"a" appears twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := CSV(tc.path, tc.opts, nil)
			if err == nil {
				s.Close()
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

const badCSV = "origin,delay\n" + // 1
	"LAS,1\n" + // 2
	"PHL,abc\n" + // 3: bad int
	"ATL,2,3\n" + // 4: field count
	"SFO,\"3\"x\n" + // 5: bad quote
	"JFK,4\n" + // 6
	"B\"OS,5\n" + // 7: bare quote
	"ORD,6\n" // 8

func TestCSVMalformed(t *testing.T) {
	cols := []core.Field{{Name: "origin", Type: core.String}, {Name: "delay", Type: core.Int64}}
	p := writeFile(t, "flights.csv", badCSV)

	// Fail: the first bad record stops the source with file:line and field.
	s, _ := CSV(p, CSVOptions{Header: true, Columns: cols}, nil)
	_, err := s.Next(ctx)
	s.Close()
	var re *core.RecordError
	if !errors.As(err, &re) || err.Error() != p+`:3: field "delay": "abc" is not an int64` {
		t.Fatalf("Fail: %v", err)
	}

	// Skip: bad records are counted, parsing goes on after each.
	errs, _ := core.NewErrorPolicy(core.Skip, "")
	s, _ = CSV(p, CSVOptions{Header: true, Columns: cols}, errs)
	rows, pos := drain(t, s)
	s.Close()
	var got []string
	for i, r := range rows {
		got = append(got, r[0].Str())
		if r[1].Int() != map[string]int64{"LAS": 1, "JFK": 4, "ORD": 6}[r[0].Str()] {
			t.Errorf("row %d: %v", i, r)
		}
	}
	if strings.Join(got, " ") != "LAS JFK ORD" || pos[1] != 6 || pos[2] != 8 || errs.Skipped.Load() != 4 {
		t.Fatalf("Skip: %v at %v, %d skipped", got, pos, errs.Skipped.Load())
	}

	// DeadLetter: each bad record is written with its position and reason.
	dl := filepath.Join(t.TempDir(), "dead.jsonl")
	errs, _ = core.NewErrorPolicy(core.DeadLetter, dl)
	s, _ = CSV(p, CSVOptions{Header: true, Columns: cols}, errs)
	rows, _ = drain(t, s)
	s.Close()
	errs.Close()
	if len(rows) != 3 || errs.DeadLettered.Load() != 4 {
		t.Fatalf("DeadLetter: %d rows, %d dead letters", len(rows), errs.DeadLettered.Load())
	}
	f, _ := os.Open(dl)
	defer f.Close()
	sc := bufio.NewScanner(f)
	var lines []int64
	var reasons []string
	for sc.Scan() {
		var d struct {
			Pos    int64
			Reason string
			Record string
		}
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, d.Pos)
		reasons = append(reasons, d.Reason)
	}
	if len(lines) != 4 || lines[0] != 3 || lines[1] != 4 || lines[2] != 5 || lines[3] != 7 {
		t.Fatalf("dead letters at lines %v", lines)
	}
	for i, w := range []string{`field "delay": "abc" is not an int64`, "3 fields, expected 2", `extraneous or missing " in quoted-field`, `bare " in non-quoted-field`} {
		if reasons[i] != w {
			t.Errorf("dead letter %d: reason %q, want %q", i, reasons[i], w)
		}
	}
}

func TestCSVBOMAndCRLF(t *testing.T) {
	s, err := CSV("", CSVOptions{Header: true, Reader: strings.NewReader("\uFEFFa,b\r\n1,2\r\n")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, _ := drain(t, s)
	if s.Schema().Names() != "a, b" || len(rows) != 1 || rows[0][1].Str() != "2" {
		t.Fatalf("schema %s rows %v", s.Schema(), rows)
	}
}

// BenchmarkCSV parses airports.csv (3,376 rows, 7 columns) with typed
// latitude/longitude; one op is one pass over the file.
func BenchmarkCSV(b *testing.B) {
	data, err := os.ReadFile(dataFile(b, "airports.csv"))
	if err != nil {
		b.Fatal(err)
	}
	cols := []core.Field{{Name: "iata", Type: core.String}, {Name: "state", Type: core.String},
		{Name: "latitude", Type: core.Float64}, {Name: "longitude", Type: core.Float64}}
	var records int64
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for range b.N {
		s, err := CSV("", CSVOptions{Header: true, Columns: cols, Reader: strings.NewReader(string(data))}, nil)
		if err != nil {
			b.Fatal(err)
		}
		for {
			batch, err := s.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			records += int64(batch.Len)
			batch.Release()
		}
	}
	b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkCSVGaps parses 20,000 records of an int64, a float64 and a
// string column, with (gaps) a fifth of the fields empty and the columns
// nullable, or (full) every field given and the columns not nullable.
// Nulls add no allocation: both make the same (encoding/csv's one string
// per record, and the source's own per pass).
func BenchmarkCSVGaps(b *testing.B) {
	for _, gaps := range []bool{false, true} {
		var sb strings.Builder
		sb.WriteString("i,f,s\n")
		for x := range 20_000 {
			i, f, s := fmt.Sprint(x), fmt.Sprint(float64(x)/4), fmt.Sprintf("s%d", x%50)
			if gaps {
				switch x % 5 {
				case 1:
					i = ""
				case 2:
					f = ""
				case 3:
					s = ""
				}
			}
			fmt.Fprintf(&sb, "%s,%s,%s\n", i, f, s)
		}
		data := sb.String()
		cols := []core.Field{{Name: "i", Type: core.Int64, Nullable: gaps}, {Name: "f", Type: core.Float64, Nullable: gaps}, {Name: "s", Type: core.String, Nullable: gaps}}
		name := "full"
		if gaps {
			name = "gaps"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for range b.N {
				s, err := CSV("", CSVOptions{Header: true, Columns: cols, Reader: strings.NewReader(data)}, nil)
				if err != nil {
					b.Fatal(err)
				}
				for {
					batch, err := s.Next(ctx)
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					batch.Release()
				}
			}
		})
	}
}
