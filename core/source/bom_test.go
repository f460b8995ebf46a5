package source

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"streamd/core"
)

// records renders a source's records as "line:|v|v", or its error.
func records(t *testing.T, s core.Source) (recs []string, err error) {
	t.Helper()
	defer s.Close()
	types := s.Schema().Fields
	for {
		b, err := s.Next(ctx)
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			return recs, err
		}
		for i := range b.Len {
			text := fmt.Appendf(nil, "%d:", b.Pos[i])
			for j, v := range b.Row(i) {
				text = append(text, '|')
				text = core.AppendText(text, types[j].Type, v)
			}
			recs = append(recs, string(text))
		}
		b.Release()
	}
}

// TestCSVBOM: a UTF-8 byte order mark at the start of the input is in no
// field, with or without a header, quoted or not, for every way a CSV
// input is read: the sequential file reader, the parallel one (whose
// blocks start after the mark), a given Reader and standard input. A mark
// alone, or with blank lines, is an empty input.
func TestCSVBOM(t *testing.T) {
	idS := []core.Field{{Name: "id", Type: core.Int64}, {Name: "s", Type: core.String}}
	str := []core.Field{{Name: "s", Type: core.String}}
	const noHeader = "csv source %s: empty input: no header"
	for _, tc := range []struct {
		name, in string
		opts     CSVOptions
		want     string // records joined by " ", or the open error (%s: the input's name)
	}{
		{"no header", "\uFEFF1,a\n2,b\n3,c\n", CSVOptions{Columns: idS}, "1:|1|a 2:|2|b 3:|3|c"},
		{"no header, quoted", "\uFEFF\"1\",a\n2,b\n", CSVOptions{Columns: idS}, "1:|1|a 2:|2|b"},
		{"quoted header (Excel)", "\uFEFF\"id\",s\n1,a\n2,b\n", CSVOptions{Header: true, Columns: idS}, "2:|1|a 3:|2|b"},
		{"quoted header, all columns", "\uFEFF\"id\",\"s\"\r\n1,a\r\n", CSVOptions{Header: true}, "2:|1|a"},
		{"header", "\uFEFFid,s\n1,a\n2,b\n", CSVOptions{Header: true, Columns: idS}, "2:|1|a 3:|2|b"},
		{"mark only", "\uFEFF", CSVOptions{Header: true, Columns: idS}, noHeader},
		{"mark only, all columns", "\uFEFF", CSVOptions{Header: true}, noHeader},
		{"mark and a blank line", "\uFEFF\n", CSVOptions{Header: true}, noHeader},
		{"mark and blank lines", "\uFEFF\r\n\n", CSVOptions{Header: true, Columns: idS}, noHeader},
		{"mark only, no header", "\uFEFF", CSVOptions{Columns: idS}, ""},
		{"a mark later is data", "x\n\uFEFFy\n", CSVOptions{Columns: str}, "1:|x 2:|\uFEFFy"},
		{"two marks: the second is data", "\uFEFF\uFEFFx\n", CSVOptions{Columns: str}, "1:|\uFEFFx"},
		{"part of a mark is data", "\xEF\xBBz\n", CSVOptions{Columns: str}, "1:|\xEF\xBBz"},
		{"one byte", "\xEF", CSVOptions{Columns: str}, "1:|\xEF"},
		{"short input", "a", CSVOptions{Columns: str}, "1:|a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(how, name string, recs []string, err error) {
				t.Helper()
				got := strings.Join(recs, " ")
				if err != nil {
					got = err.Error()
				}
				want := tc.want
				if strings.Contains(want, "%s") {
					want = fmt.Sprintf(want, name)
				}
				if got != want {
					t.Errorf("%s: %q, want %q", how, got, want)
				}
			}
			path := writeFile(t, "in.csv", tc.in)
			// The sequential file reader, and given Readers.
			for _, r := range []struct {
				how, path string
				in        io.Reader
			}{
				{"file", path, nil},
				{"reader", "", strings.NewReader(tc.in)},
				{"one byte at a time", "", iotest.OneByteReader(strings.NewReader(tc.in))},
			} {
				opts := tc.opts
				opts.Parallelism, opts.Reader = 1, r.in
				name := r.path
				if name == "" {
					name = "stdin"
				}
				s, err := CSV(r.path, opts, nil)
				if err != nil {
					check(r.how, name, nil, err)
					continue
				}
				recs, err := records(t, s)
				check(r.how, name, recs, err)
			}
			// The parallel reader, in blocks of a few bytes.
			for _, k := range []int{2, 3} {
				for _, bs := range []int{1, 2, 3, 4, 7} {
					opts := tc.opts
					opts.Parallelism = k
					s, err := csvSource(path, opts, nil, bs)
					if err != nil {
						check(fmt.Sprintf("parallel %d, block %d", k, bs), path, nil, err)
						continue
					}
					if _, ok := s.(*csvParallel); !ok && len(tc.in) > bs {
						t.Fatalf("parallel %d, block %d: not a parallel source", k, bs)
					}
					recs, err := records(t, s)
					check(fmt.Sprintf("parallel %d, block %d", k, bs), path, recs, err)
				}
			}
			// Standard input.
			s, err := Stdin("csv", StdinOptions{Reader: iotest.HalfReader(strings.NewReader(tc.in)), Header: tc.opts.Header, Columns: tc.opts.Columns}, nil)
			if err != nil {
				check("stdin", "stdin", nil, err)
				return
			}
			recs, err := records(t, s)
			check("stdin", "stdin", recs, err)
		})
	}
}

// TestJSONLBOM: a byte order mark before the first object is dropped, from
// a file and from standard input; later ones are malformed lines.
func TestJSONLBOM(t *testing.T) {
	fields := []core.Field{{Name: "id", Type: core.Int64}}
	in := "\uFEFF{\"id\":1}\n{\"id\":2}\n"
	s, err := JSONL(writeFile(t, "in.jsonl", in), fields, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := records(t, s)
	if got := strings.Join(recs, " "); err != nil || got != "1:|1 2:|2" {
		t.Fatalf("file: %q, %v", got, err)
	}
	s, err = Stdin("jsonl", StdinOptions{Reader: iotest.OneByteReader(strings.NewReader(in)), Columns: fields}, nil)
	if err != nil {
		t.Fatal(err)
	}
	recs, err = records(t, s)
	if got := strings.Join(recs, " "); err != nil || got != "1:|1 2:|2" {
		t.Fatalf("stdin: %q, %v", got, err)
	}
	s, _ = JSONL("", fields, nil, strings.NewReader("{\"id\":1}\n\uFEFF{\"id\":2}\n"), nil)
	_, err = records(t, s)
	var re *core.RecordError
	if !errors.As(err, &re) || re.Pos != 2 {
		t.Fatalf("a mark on line 2: %v, want a malformed record at line 2", err)
	}
}
