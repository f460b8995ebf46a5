package source

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"streamd/core"
)

// A quoted field keeps its line breaks byte for byte (RFC 4180): a CRLF
// inside quotes is part of the value, where the CRLF that ends a record is
// not, and a bare LF inside quotes stays a bare LF. The sequential reader,
// Next over blocks, the parallel parser and ReadBlock by 1 and 3 workers
// give the same values, whatever the block size. A header with a CRLF in a
// quoted name keeps it too, and the records after it start where they do.
func TestCSVQuotedCRLF(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		opts CSVOptions
		want []string // "line:|v|v"
	}{
		{name: "fields",
			in: "id,note\r\n" +
				"1,\"a\r\nb\"\r\n" + // CRLF inside quotes, CRLF record end
				"2,\"c\nd\"\r\n" + // a bare LF inside quotes
				"3,\"e\r\r\nf\"\n" + // a CR before the CRLF
				"4,plain\r\n" +
				"\r\n" +
				"5,\"\r\n\r\n\"\r\n" + // nothing but CRLFs
				"6,\"g\"\"\r\nh\"\r\n" + // after an escaped quote
				"7,\"i\r\n\"", // at the end of the input
			opts: CSVOptions{Header: true, Columns: []core.Field{{Name: "id", Type: core.Int64}, {Name: "note", Type: core.String}}},
			want: []string{"2:|1|a\r\nb", "4:|2|c\nd", "6:|3|e\r\r\nf", "8:|4|plain", "10:|5|\r\n\r\n", "13:|6|g\"\r\nh", "15:|7|i\r\n"}},
		{name: "header",
			in:   "\"i\r\nd\",note\r\n1,\"a\r\nb\"\r\n2,x\r\n",
			opts: CSVOptions{Header: true},
			want: []string{"3:|1|a\r\nb", "5:|2|x"}},
		{name: "no header",
			in:   "1,\"a\r\nb\"\r\n2,x\r\n",
			opts: CSVOptions{Columns: []core.Field{{Name: "id", Type: core.Int64}, {Name: "note", Type: core.String}}},
			want: []string{"1:|1|a\r\nb", "3:|2|x"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs := csvOpeners(t, c.in, c.opts, []int64{1, 3, 1 << 20})
			want := strings.Join(c.want, "\n")
			check := func(what string, got textRead) {
				t.Helper()
				if got.err != "" || got.dead != 0 || got.skipped != 0 {
					t.Fatalf("%s: error %q, %d dead letters, %d skipped", what, got.err, got.dead, got.skipped)
				}
				if g := strings.Join(got.recs, "\n"); g != want {
					t.Fatalf("%s: records\n%q\nwant\n%q", what, g, want)
				}
			}
			check("sequential", readNext(t, cs.seq, core.Fail))
			for i, open := range cs.blocks {
				check(fmt.Sprintf("blocks %d, Next", i), readNext(t, open, core.Fail))
				for _, m := range []int{1, 3} {
					got, _ := readByBlocks(t, open, core.Fail, m)
					check(fmt.Sprintf("blocks %d, ReadBlock by %d", i, m), got)
				}
			}
			if c.name == "header" {
				s, err := cs.seq(nil)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if got := s.Schema().Fields[0].Name; got != "i\r\nd" {
					t.Fatalf("header name %q, want %q", got, "i\r\nd")
				}
			}
		})
	}
}

// A followed file keeps a quoted CRLF too, and its records start right
// after a header whose extra column's name holds one.
func TestFollowQuotedCRLF(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.csv")
	appendFile(t, path, "k,v,\"no\r\nte\"\r\n\"a\r\nb\",1,x\r\n")
	s := follow(t, path)
	equal(t, liveRecords(t, s, 1), []string{"a\r\nb=1@3"})
	appendFile(t, path, "c,2,\"y\r\nz\"\r\n\"d\r\n\",3,w\r\n")
	equal(t, liveRecords(t, s, 2), []string{"c=2@5", "d\r\n=3@7"})
}
