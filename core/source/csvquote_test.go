package source

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"streamd/core"
	"streamd/internal/tier"
)

var kvOpts = CSVOptions{Header: true, Columns: []core.Field{{Name: "k", Type: core.String}, {Name: "v", Type: core.Int64}}}

// kvLines returns n records "k<i>,<i>\n" for i in [from, from+n).
func kvLines(from, n int) string {
	var b strings.Builder
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, "k%d,%d\n", i, i)
	}
	return b.String()
}

// letter is one dead letter as the file holds it.
type letter struct {
	Input  string `json:"input"`
	Pos    int64  `json:"pos"`
	Reason string `json:"reason"`
	Record string `json:"record"`
}

func letters(t *testing.T, text string) []letter {
	t.Helper()
	var ls []letter
	for l := range strings.Lines(text) {
		var x letter
		if err := json.Unmarshal([]byte(l), &x); err != nil {
			t.Fatalf("dead letter %q: %v", l, err)
		}
		ls = append(ls, x)
	}
	return ls
}

// An unclosed quote costs its own record only, however it is found open:
// past max_quoted_lines, past max_quoted_bytes, at a quote that closes
// nothing, or at the end of the input. The record is reported on its first
// line with a reason that names the line the field opened on, the dead
// letter holds its raw text, and every record after the opening line is
// read, with its own line. Blocks (of every size, by 1, 2, 3 and 8
// workers) and the parallel parser give the same records, dead letters and
// first error as the sequential reader.
func TestCSVUnclosedQuote(t *testing.T) {
	for _, c := range []struct {
		name      string
		lines     int
		bytes     int64
		open      string // the bad line (line 12 of the file)
		after     string // the lines after it
		reason    string
		rawPrefix string
	}{
		{name: "lines", lines: 5, open: "bad,\"never closed\n", after: kvLines(100, 30),
			reason:    "the quoted field opened on line 12 spans more than 5 lines (max_quoted_lines); reading resumes on line 13",
			rawPrefix: "bad,\"never closed\nk100,100\nk101,101\nk102,102\nk103,103"},
		{name: "bytes", lines: 1000, bytes: 40, open: "bad,\"never closed\n", after: kvLines(100, 30),
			reason:    "the quoted field opened on line 12 holds more than 40 bytes (max_quoted_bytes); reading resumes on line 13",
			rawPrefix: "bad,\"never closed\nk100,100\nk101,101"},
		{name: "stray", open: "bad,\"never closed\n", after: kvLines(100, 5) + "q,\"7\"\n" + kvLines(105, 20),
			reason:    "the quoted field opened on line 12 meets a quote on line 18 that closes no field; reading resumes on line 13",
			rawPrefix: "bad,\"never closed\nk100,100\nk101,101\nk102,102\nk103,103\nk104,104\nq,"},
		{name: "eof", open: "bad,\"never closed\n", after: kvLines(100, 30),
			reason:    "the quoted field opened on line 12 is still open at the end of the input; reading resumes on line 13",
			rawPrefix: "bad,\"never closed\nk100,100\n"},
		// A record that starts with a good two-line field and then opens
		// one that never closes: reported on its first line, resumed after
		// the line the open field starts on.
		{name: "second field", lines: 4, open: "bad,\"two\nlines\",\"open\n", after: kvLines(100, 30),
			reason:    "the quoted field opened on line 13 spans more than 4 lines (max_quoted_lines); reading resumes on line 14",
			rawPrefix: "bad,\"two\nlines\",\"open\nk100,100\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			content := "k,v\n" + kvLines(0, 10) + c.open + c.after
			opts := kvOpts
			opts.MaxQuotedLines, opts.MaxQuotedBytes = c.lines, c.bytes
			if c.name == "eof" {
				opts.MaxQuotedLines = 1000 // the field reaches the end first
			}
			cs := csvOpeners(t, content, opts, []int64{1, 7, 64, 1 << 20})
			got := readNext(t, cs.seq, core.DeadLetter)
			var want []string
			for i := range 10 {
				want = append(want, fmt.Sprintf("%d:|k%d|%d", i+2, i, i))
			}
			next := 12 + strings.Count(c.open, "\n") - 1 // the line after the open field's
			for l := range strings.Lines(c.after) {
				next++
				var k string
				var v int64
				if _, err := fmt.Sscanf(strings.Replace(strings.Replace(l, ",", " ", 1), "\"", "", -1), "%s %d", &k, &v); err != nil {
					t.Fatalf("%q: %v", l, err)
				}
				want = append(want, fmt.Sprintf("%d:|%s|%d", next, k, v))
			}
			if strings.Join(got.recs, "\n") != strings.Join(want, "\n") {
				t.Fatalf("records\n%s\nwant\n%s", strings.Join(got.recs, "\n"), strings.Join(want, "\n"))
			}
			ls := letters(t, got.letters)
			if got.dead != 1 || len(ls) != 1 || got.skipped != 0 {
				t.Fatalf("%d dead letters (%d skipped): %s", got.dead, got.skipped, got.letters)
			}
			if ls[0].Pos != 12 || ls[0].Reason != "unclosed quote: "+c.reason || !strings.HasPrefix(ls[0].Record, c.rawPrefix) {
				t.Fatalf("dead letter %+v\nwant pos 12, reason %q, record from %q", ls[0], c.reason, c.rawPrefix)
			}
			fail := readNext(t, cs.seq, core.Fail)
			if want := "in.csv:12: unclosed quote: " + c.reason; !strings.HasSuffix(fail.err, want) {
				t.Fatalf("fail: %q\nwant %q", fail.err, want)
			}
			checkTextBlocks(t, cs)
		})
	}
}

// Unclosed quotes at many places of a file of several 1 MiB blocks:
// before, on and after block thresholds, at the end. Each costs one
// record; the blocks and the parallel parser read what the sequential
// reader reads (the fast tier: 1 and 3 workers, dead letters and fail; the
// long tier: checkTextBlocks, every mode and 1, 2, 3, 8 workers).
func TestCSVUnclosedQuoteAtBlockEnds(t *testing.T) {
	const n = 160_000
	base := "k,v\n" + kvLines(0, n) // 2.2 MB: 3 blocks
	var cuts []int
	for b := 1; b <= 2; b++ {
		thr := 4 + b*splitSize
		for _, d := range []int{-40, -14, -1, 0, 1, 14} {
			cuts = append(cuts, thr+d)
		}
	}
	cuts = append(cuts, len(base)-20)
	// Turn the line holding each cut into an unclosed quote: "bad,\"<rest>".
	bs := []byte(base)
	opened := 0
	for _, at := range cuts {
		ls := strings.LastIndexByte(base[:at], '\n') + 1
		if bs[ls] == 'b' { // already done
			continue
		}
		copy(bs[ls:], "b,\"")
		opened++
	}
	content := string(bs)
	opts := kvOpts
	opts.MaxQuotedLines = 50
	path := writeFile(t, "in.csv", content)
	cs := textCase{seq: func(errs *core.ErrorPolicy) (core.Source, error) {
		o := opts
		o.Reader = strings.NewReader(content)
		return CSV(path, o, errs)
	}}
	for _, par := range []int{1, 3} {
		cs.blocks = append(cs.blocks, func(errs *core.ErrorPolicy) (core.Source, error) {
			o := opts
			o.Parallelism = par
			return CSV(path, o, errs)
		})
	}
	want := readNext(t, cs.seq, core.DeadLetter)
	if len(want.recs) != n-opened || want.dead != int64(opened) || opened < 10 {
		t.Fatalf("%d records, %d dead letters; want %d, %d", len(want.recs), want.dead, n-opened, opened)
	}
	if tier.Long() {
		checkTextBlocks(t, cs)
		return
	}
	// The fast tier: dead letters (records, Pos, letters) by Next and by
	// 1 and 3 workers, and the first error under Fail.
	wantFail := readNext(t, cs.seq, core.Fail)
	for i, open := range cs.blocks {
		if d := readNext(t, open, core.DeadLetter).diff(want); d != "" {
			t.Fatalf("source %d: Next: %s", i, d)
		}
		for _, m := range []int{1, 3} {
			got, _ := readByBlocks(t, open, core.DeadLetter, m)
			if d := got.diff(want); d != "" {
				t.Fatalf("source %d, %d workers: %s", i, m, d)
			}
		}
		if got := readNext(t, open, core.Fail); got.err != wantFail.err {
			t.Fatalf("source %d, fail: %q, want %q", i, got.err, wantFail.err)
		}
	}
	if got, _ := readByBlocks(t, cs.blocks[0], core.Fail, 3); got.err != wantFail.err {
		t.Fatalf("fail, 3 workers: %q, want %q", got.err, wantFail.err)
	}
}

// Stdin's CSV follows the same rule with its own limits: a field left open
// past max_quoted_lines costs its record, and the lines after the opening
// line are read.
func TestStdinUnclosedQuote(t *testing.T) {
	content := "k,v\n" + kvLines(0, 3) + "bad,\"open\n" + kvLines(3, 10)
	got := readNext(t, func(errs *core.ErrorPolicy) (core.Source, error) {
		return Stdin("csv", StdinOptions{Reader: strings.NewReader(content), Header: true, Columns: kvOpts.Columns, MaxQuotedLines: 3}, errs)
	}, core.DeadLetter)
	ls := letters(t, got.letters)
	if len(got.recs) != 13 || got.recs[3] != "6:|k3|3" || len(ls) != 1 || ls[0].Pos != 5 ||
		ls[0].Reason != "unclosed quote: the quoted field opened on line 5 spans more than 3 lines (max_quoted_lines); reading resumes on line 6" {
		t.Fatalf("records %v, dead letters %s", got.recs, got.letters)
	}
}
