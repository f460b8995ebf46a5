package source

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"streamd/core"
)

var jsonFields = []core.Field{
	{Name: "s", Type: core.String},
	{Name: "i", Type: core.Int64},
	{Name: "f", Type: core.Float64},
	{Name: "b", Type: core.Bool},
	{Name: "t", Type: core.Timestamp},
}

func TestJSONL(t *testing.T) {
	in := `{"s":"LAS","i":1,"f":0.5,"b":true,"t":"2001-01-01T00:01:00Z"}` + "\n" +
		"\n" +
		"   \t\r\n" +
		`{"t":978307260000000000,"b":false,"f":-2,"i":-9223372036854775808,"s":"\u00e9\ud83d\ude00 \"q\" \\ \/ \n\t","x":{"y":[1,2,{"z":null}]}}` + "\r\n" +
		` { "s" : "a" , "i" : 1e3 , "f" : 1E-2 , "b" : true , "t" : "2001-01-02" , "s" : "LAS" } ` + "\n" +
		`{"s":"","i":2.0,"f":0,"b":false,"t":0,"extra":"ignored"}` // no final newline
	s, err := JSONL("", jsonFields, nil, strings.NewReader(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, pos := drain(t, s)
	want := []struct {
		s    string
		i    int64
		f    float64
		b    bool
		t    int64
		line int64
	}{
		{"LAS", 1, 0.5, true, ts("2001-01-01T00:01:00Z"), 1},
		{"é😀 \"q\" \\ / \n\t", math.MinInt64, -2, false, 978307260000000000, 4},
		{"LAS", 1000, 0.01, true, ts("2001-01-02T00:00:00Z"), 5},
		{"", 2, 0, false, 0, 6},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for k, w := range want {
		r := rows[k]
		if r[0].Str() != w.s || r[1].Int() != w.i || r[2].Float() != w.f || r[3].Bool() != w.b || r[4].Time() != w.t || pos[k] != w.line {
			t.Errorf("row %d: %q %d %g %t %d at line %d, want %+v", k, r[0].Str(), r[1].Int(), r[2].Float(), r[3].Bool(), r[4].Time(), pos[k], w)
		}
	}
}

func TestJSONLMalformed(t *testing.T) {
	good := `{"s":"a","i":1,"f":1,"b":true,"t":0}`
	for _, tc := range []struct{ line, want string }{
		{`not json`, "invalid JSON at column 1: expected an object ('{'), found 'n'"},
		{`[1,2]`, "expected an object ('{'), found an array ('[') (to read the objects in an array, use json: with format: array, or explode:)"},
		{`{"s":"a","i":1,"f":1,"b":true,"t":0} x`, "invalid JSON at column 38: unexpected data after the object"},
		{`{"s":"a","i":1,"f":1,"b":true}`, `field "t" is missing`},
		{`{"s":null,"i":1,"f":1,"b":true,"t":0}`, `field "s" is null`},
		{`{"s":1,"i":1,"f":1,"b":true,"t":0}`, `field "s": 1 is not a string`},
		{`{"s":"a","i":"1","f":1,"b":true,"t":0}`, `field "i": "1" is not an int64`},
		{`{"s":"a","i":1.5,"f":1,"b":true,"t":0}`, `field "i": 1.5 is not an int64: not integral`},
		{`{"s":"a","i":99999999999999999999,"f":1,"b":true,"t":0}`, `field "i": 99999999999999999999 is not an int64: out of range`},
		{`{"s":"a","i":1,"f":true,"b":true,"t":0}`, `field "f": true is not a float64`},
		{`{"s":"a","i":1,"f":1,"b":1,"t":0}`, `field "b": 1 is not a bool`},
		{`{"s":"a","i":1,"f":1,"b":true,"t":"yesterday"}`, `field "t": "yesterday" is not a timestamp`},
		{`{"s":"a","i":1,"f":1,"b":true,"t":0.5}`, `field "t": 0.5 is not a timestamp (ns since the epoch): not integral`},
		{`{"s":"a","i":1,"f":1,"b":true,"t":[0]}`, `field "t": [0] is not a timestamp`},
		{`{"s":"abc`, "unterminated string"},
		{`{"s":"a\qb"}`, "invalid escape"},
		{`{"s":"a\u12"}`, `invalid \u escape`},
		{"{\"s\":\"a\tb\"}", "control character in string"},
		{`{"s":"a","i":01}`, "expected ',' or '}'"},
		{`{"s":"a","i":-}`, "invalid number"},
		{`{"s":"a","i":1.}`, "no digits after '.'"},
		{`{"s":"a","i":1e}`, "no digits in the exponent"},
		{`{"s":"a","x":tru}`, "invalid literal"},
		{`{"s":"a",}`, "expected a member name"},
		{`{"s" "a"}`, "expected ':'"},
		{`{"x":` + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + `}`, "nested too deeply"},
		{`{"x":{"a":1,}}`, "expected a member name"},
		{`{"x":[1 2]}`, "expected ',' or ']'"},
		{`{`, "expected a member name at the end of the line"},
	} {
		t.Run(tc.line[:min(len(tc.line), 30)], func(t *testing.T) {
			in := good + "\n" + tc.line + "\n" + good + "\n"
			s, err := JSONL("events.jsonl", jsonFields, nil, strings.NewReader(in), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			_, err = s.Next(ctx)
			var re *core.RecordError
			if !errors.As(err, &re) || re.Pos != 2 || re.Input != "events.jsonl" || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want events.jsonl:2: …%s", err, tc.want)
			}

			errs, _ := core.NewErrorPolicy(core.Skip, "")
			s2, _ := JSONL("events.jsonl", jsonFields, nil, strings.NewReader(in), errs)
			defer s2.Close()
			rows, pos := drain(t, s2)
			if len(rows) != 2 || pos[1] != 3 || errs.Skipped.Load() != 1 {
				t.Fatalf("Skip: %d rows at %v, %d skipped", len(rows), pos, errs.Skipped.Load())
			}
		})
	}
}

func TestJSONLConfig(t *testing.T) {
	if _, err := JSONL("x.jsonl", nil, nil, strings.NewReader(""), nil); err == nil || !strings.Contains(err.Error(), "no fields") {
		t.Fatalf("no fields: %v", err)
	}
	if _, err := JSONL("/nonexistent/x.jsonl", jsonFields, nil, nil, nil); err == nil || !strings.Contains(err.Error(), "/nonexistent/x.jsonl") {
		t.Fatalf("missing file: %v", err)
	}
	p := writeFile(t, "x.jsonl", `{"s":"a","i":1,"f":1,"b":true,"t":0}`+"\n")
	s, err := JSONL(p, jsonFields, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := drain(t, s)
	if len(rows) != 1 {
		t.Fatalf("%d rows", len(rows))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestJSONLLongLine(t *testing.T) {
	long := strings.Repeat("é", 100_000) // longer than the read buffer
	in := fmt.Sprintf(`{"s":%q,"i":1,"f":1,"b":true,"t":0}`+"\n", long) + `{"s":"b","i":2,"f":1,"b":true,"t":0}`
	s, _ := JSONL("", jsonFields, nil, strings.NewReader(in), nil)
	defer s.Close()
	rows, _ := drain(t, s)
	if len(rows) != 2 || rows[0][0].Str() != long || rows[1][0].Str() != "b" {
		t.Fatalf("%d rows", len(rows))
	}
}

// TestJSONLMatchesEncodingJSON: objects that encoding/json writes (random
// strings, numbers, nested members) parse to the values encoding/json
// reads back; and any line, mutated at random, is accepted only if
// encoding/json finds it valid.
func TestJSONLMatchesEncodingJSON(t *testing.T) {
	fields := []core.Field{{Name: "s", Type: core.String}, {Name: "f", Type: core.Float64}, {Name: "i", Type: core.Int64}}
	rapid.Check(t, func(t *rapid.T) {
		obj := map[string]any{
			"s": rapid.String().Draw(t, "s"),
			"f": rapid.Float64().Filter(func(f float64) bool { return !math.IsInf(f, 0) && !math.IsNaN(f) }).Draw(t, "f"),
			"i": rapid.Int64().Draw(t, "i"),
			"n": rapid.SliceOf(rapid.String()).Draw(t, "n"),
		}
		line, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		var back struct {
			S string
			F float64
			I int64
		}
		json.Unmarshal(line, &back)
		s, _ := JSONL("", fields, nil, strings.NewReader(string(line)), nil)
		b, err := s.Next(ctx)
		s.Close()
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		r := b.Row(0)
		if r[0].Str() != back.S || r[1].Float() != back.F || r[2].Int() != back.I {
			t.Fatalf("%s: got %q %g %d, want %q %g %d", line, r[0].Str(), r[1].Float(), r[2].Int(), back.S, back.F, back.I)
		}
		b.Release()

		// Mutate: overwrite, insert or delete a byte.
		m := []byte(string(line))
		for range rapid.IntRange(1, 3).Draw(t, "mutations") {
			k := rapid.IntRange(0, len(m)-1).Draw(t, "at")
			c := rapid.SampledFrom([]byte(`{}[]":,.-+eE0129 \tatrufnlsx\u`)).Draw(t, "byte")
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				m[k] = c
			case 1:
				m = append(m[:k], append([]byte{c}, m[k:]...)...)
			case 2:
				m = append(m[:k], m[k+1:]...)
			}
		}
		if strings.ContainsAny(string(m), "\n") {
			return
		}
		errs, _ := core.NewErrorPolicy(core.Skip, "")
		s, _ = JSONL("", fields, nil, strings.NewReader(string(m)), errs)
		b, err = s.Next(ctx)
		s.Close()
		if err == nil {
			b.Release()
			if !json.Valid(m) {
				t.Fatalf("accepted invalid JSON %s", m)
			}
		} else if err != io.EOF {
			t.Fatal(err)
		}
	})
}

// BenchmarkJSONL parses records with the flights file's shape; one op is
// one batch of core.BatchSize records.
func BenchmarkJSONL(b *testing.B) {
	fields := []core.Field{{Name: "date", Type: core.Timestamp}, {Name: "delay", Type: core.Int64},
		{Name: "distance", Type: core.Int64}, {Name: "origin", Type: core.String}, {Name: "destination", Type: core.String}}
	codes := []string{"LAS", "PHL", "ATL", "CVG", "ORD", "SFO", "JFK"}
	var sb strings.Builder
	for i := range core.BatchSize {
		fmt.Fprintf(&sb, `{"date":"2001-01-01T00:%02d:00Z","delay":%d,"distance":%d,"origin":%q,"destination":%q}`+"\n",
			i%60, i%300-20, 100+i, codes[i%7], codes[(i*3)%7])
	}
	data := sb.String()
	r := strings.NewReader(data)
	s, err := JSONL("", fields, nil, io.MultiReader(repeatReader{r, data}), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var records int64
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		batch, err := s.Next(ctx)
		if err != nil {
			b.Fatal(err)
		}
		records += int64(batch.Len)
		batch.Release()
	}
	b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
}

// repeatReader reads data over and over.
type repeatReader struct {
	r    *strings.Reader
	data string
}

func (rr repeatReader) Read(p []byte) (int, error) {
	n, err := rr.r.Read(p)
	if err == io.EOF {
		rr.r.Reset(rr.data)
		return n, nil
	}
	return n, err
}
