package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"streamd/core"
	"streamd/internal/tier"
)

// textRead is what a text source observably does on one input: its
// records ("line:|v|v") in order, the batches' lengths, the error that
// stopped it, the policy's counts and the dead-letter file.
type textRead struct {
	recs          []string
	sizes         []int
	err           string
	skipped, dead int64
	letters       string
}

func (r textRead) diff(want textRead) string {
	switch {
	case r.err != want.err:
		return fmt.Sprintf("error %q, want %q", r.err, want.err)
	case r.skipped != want.skipped || r.dead != want.dead:
		return fmt.Sprintf("%d skipped, %d dead letters; want %d, %d", r.skipped, r.dead, want.skipped, want.dead)
	case r.letters != want.letters:
		return fmt.Sprintf("dead letters\n%s\nwant\n%s", r.letters, want.letters)
	case !slices.Equal(r.recs, want.recs):
		i := firstDiff(r.recs, want.recs)
		return fmt.Sprintf("%d records, want %d; first difference at %d", len(r.recs), len(want.recs), i)
	}
	return ""
}

func (r *textRead) add(b *core.Batch) {
	r.sizes = append(r.sizes, b.Len)
	var text []byte
	for i := range b.Len {
		text = fmt.Appendf(text[:0], "%d:", b.Pos[i])
		for j, v := range b.Row(i) {
			text = core.AppendText(append(text, '|'), b.Schema.Fields[j].Type, v)
		}
		r.recs = append(r.recs, string(text))
	}
}

func (r *textRead) finish(t testing.TB, errs *core.ErrorPolicy, dl string) {
	t.Helper()
	if err := errs.Close(); err != nil {
		t.Fatal(err)
	}
	r.skipped, r.dead = errs.Skipped.Load(), errs.DeadLettered.Load()
	if d, err := os.ReadFile(dl); err == nil {
		r.letters = string(d)
	}
}

// openText opens a source of the file at path under a fresh policy of
// mode; open gets the policy.
type openText func(errs *core.ErrorPolicy) (core.Source, error)

func newPolicy(t testing.TB, mode core.ErrorMode) (*core.ErrorPolicy, string) {
	t.Helper()
	dl := filepath.Join(t.TempDir(), "dead.jsonl")
	errs, err := core.NewErrorPolicy(mode, dl)
	if err != nil {
		t.Fatal(err)
	}
	return errs, dl
}

// readNext reads a source with Next to its end or first error.
func readNext(t testing.TB, open openText, mode core.ErrorMode) textRead {
	t.Helper()
	errs, dl := newPolicy(t, mode)
	var r textRead
	s, err := open(errs)
	if err != nil {
		r.err = "open: " + err.Error()
		return r
	}
	for {
		b, err := s.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			r.err = err.Error()
			break
		}
		r.add(b)
		b.Release()
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r.finish(t, errs, dl)
	return r
}

// readByBlocks reads every block of a Splittable source with m concurrent
// workers, block b by worker b mod m, each with its own deferred policy,
// as the runtime does: the batches are joined and the dead letters written
// in block order. Under Fail the error is the first block's, in block
// order, that failed.
func readByBlocks(t testing.TB, open openText, mode core.ErrorMode, m int) (textRead, int) {
	t.Helper()
	errs, dl := newPolicy(t, mode)
	var r textRead
	src, err := open(errs)
	if err != nil {
		r.err = "open: " + err.Error()
		return r, 0
	}
	s, ok := src.(core.Splittable)
	if !ok {
		t.Fatalf("%T is not splittable", src)
	}
	n := s.Blocks()
	batches := make([][]*core.Batch, n)
	letters := make([][][]byte, n)
	fails := make([]error, n)
	var wg sync.WaitGroup
	for w := range m {
		wg.Go(func() {
			d := errs.Deferred()
			for b := w; b < n; b += m {
				fails[b] = s.ReadBlock(context.Background(), b, d, func(bt *core.Batch) error {
					batches[b] = append(batches[b], bt)
					return nil
				})
				letters[b] = d.TakeDeferred()
			}
		})
	}
	wg.Wait()
	for b := range n {
		if err := errs.WriteDeferred(letters[b]); err != nil {
			t.Fatal(err)
		}
		for _, bt := range batches[b] {
			if r.err == "" {
				r.add(bt)
			}
			bt.Release()
		}
		if fails[b] != nil && r.err == "" {
			r.err = fails[b].Error()
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r.finish(t, errs, dl)
	return r, n
}

// checkTextBlocks checks a text source's blocks against the sequential
// reader (seq: a source over an io.Reader, never split): under Skip and
// DeadLetter, the blocks read by blockWorkers workers give its records,
// Pos and dead letters, and Next over blocks gives the same batches as the
// blocks; under Fail, the same first error.
func checkTextBlocks(t *testing.T, c textCase) {
	seq, blocks := c.seq, c.blocks
	t.Helper()
	for _, mode := range []core.ErrorMode{core.Skip, core.DeadLetter, core.Fail} {
		want := readNext(t, seq, mode)
		for i, open := range blocks {
			next := readNext(t, open, mode)
			if mode == core.Fail {
				if next.err != want.err {
					t.Fatalf("source %d, fail: Next: error %q, sequential %q", i, next.err, want.err)
				}
			} else if d := next.diff(want); d != "" {
				t.Fatalf("source %d, %v: Next: %s", i, mode, d)
			}
			for _, m := range blockWorkers {
				got, _ := readByBlocks(t, open, mode, m)
				if mode == core.Fail {
					if got.err != want.err {
						t.Fatalf("source %d, fail, %d workers: error %q, sequential %q", i, m, got.err, want.err)
					}
					continue
				}
				if d := got.diff(want); d != "" {
					t.Fatalf("source %d, %v, %d workers: %s", i, mode, m, d)
				}
				if !slices.Equal(got.sizes, next.sizes) {
					t.Fatalf("source %d, %v, %d workers: batches %v, Next's %v", i, mode, m, got.sizes, next.sizes)
				}
			}
		}
	}
}

// csvOpeners returns the sequential CSV reader of content (over an
// io.Reader) and block readers of it with each block size given, each
// with the sequential Next (parallelism 1) and the parallel parser (3
// workers, 7-byte chunks).
// textCase is a sequential reader and block readers of one input.
type textCase struct {
	seq    openText
	blocks []openText
}

func csvOpeners(t *testing.T, content string, opts CSVOptions, sizes []int64) (c textCase) {
	path := writeFile(t, "in.csv", content)
	c.seq = func(errs *core.ErrorPolicy) (core.Source, error) {
		o := opts
		o.Reader = strings.NewReader(content)
		return CSV(path, o, errs)
	}
	for _, size := range sizes {
		for _, par := range []int{1, 3} {
			c.blocks = append(c.blocks, func(errs *core.ErrorPolicy) (core.Source, error) {
				o := opts
				o.Parallelism = par
				return csvSplitSource(path, o, errs, 7, size)
			})
		}
	}
	return c
}

func jsonlOpeners(t *testing.T, content string, fields []core.Field, sizes []int64) (c textCase) {
	path := writeFile(t, "in.jsonl", content)
	c.seq = func(errs *core.ErrorPolicy) (core.Source, error) {
		return JSONL(path, fields, nil, strings.NewReader(content), errs)
	}
	for _, size := range sizes {
		c.blocks = append(c.blocks, func(errs *core.ErrorPolicy) (core.Source, error) {
			return jsonlSource(path, fields, nil, nil, errs, size)
		})
	}
	return c
}

// blockSizes are the block sizes, in bytes, the text sources are cut in
// by the tests that compare them with the sequential reader: 1 puts a
// threshold at every byte, 1 MiB makes one block. The fast tier leaves out
// 5 and 13.
var blockSizes = tier.Pick([]int64{1, 2, 3, 8, 40, 1 << 20}, []int64{1, 2, 3, 5, 8, 13, 40, 1 << 20})

// blockWorkers are the numbers of workers checkTextBlocks reads the
// blocks with: one reading every block in order, and three taking turns
// (the fast tier); also 2 and 8 in the long tier.
var blockWorkers = tier.Pick([]int{1, 3}, []int{1, 2, 3, 8})

// A CSV file with everything that makes block starts hard: quoted fields
// with newlines and escaped quotes (so at every block size some block
// threshold falls inside one), CRLF, a byte order mark, empty lines, a
// record longer than many blocks, malformed records (bad values, wrong
// field counts, a bare quote, text after a closing quote) and no final
// '\n'.
func TestCSVBlocksSameAsSequential(t *testing.T) {
	long := strings.Repeat("x", 300)
	body := "\ufeffk,v,note\r\n" +
		"a,1,plain\r\n" +
		"b,2,\"two\r\nlines\"\r\n" +
		"\r\n" +
		"c,3,\"say \"\"hi\"\"\"\n" +
		"d,oops,\"bad \"\"int\"\"\"\n" +
		"\n\n" +
		"e,5,\"" + long + "\n" + long + "\"\n" +
		"f,6\n" +
		"g,7,bare\"quote\n" +
		"h,8,\"closed\"text\n" +
		"i,9,\"\"\"\"\n" +
		"j,10,\",\"\r\n" +
		"k,11,last"
	opts := CSVOptions{Header: true, Columns: []core.Field{{Name: "k", Type: core.String}, {Name: "v", Type: core.Int64}, {Name: "note", Type: core.String}}}
	checkTextBlocks(t, csvOpeners(t, body, opts, blockSizes))
	// The same without a header, and with a multi-byte delimiter.
	noHeader := strings.TrimPrefix(body, "\ufeffk,v,note\r\n")
	opts.Header = false
	checkTextBlocks(t, csvOpeners(t, noHeader, opts, blockSizes))
	opts.Delimiter = '§'
	checkTextBlocks(t, csvOpeners(t, strings.ReplaceAll(noHeader, ",", "§"), opts, blockSizes))
}

// A quoted field left open (no '"' after it) costs its own record, not the
// rest of the file: the blocks after it start where they would without
// it, at their thresholds' first record. The same with quotes after it
// (the open field meets one that closes nothing) and with an escaped quote
// as the file's last bytes.
func TestCSVBlocksUnclosedQuote(t *testing.T) {
	var b strings.Builder
	b.WriteString("k,v\n")
	for i := range 50 {
		fmt.Fprintf(&b, "k%d,%d\n", i, i)
	}
	b.WriteString("open,\"never closed\n")
	for i := range 50 {
		fmt.Fprintf(&b, "k%d,%d\n", i, i)
	}
	opts := CSVOptions{Header: true, Columns: []core.Field{{Name: "k", Type: core.String}, {Name: "v", Type: core.Int64}}}
	content := b.String()
	checkTextBlocks(t, csvOpeners(t, content, opts, []int64{1, 7, 64}))
	i := strings.LastIndex(content, "k30,30\n")
	checkTextBlocks(t, csvOpeners(t, content[:i]+"k30,\"30\"\n"+content[i+len("k30,30\n"):], opts, []int64{1, 7, 64}))
	checkTextBlocks(t, csvOpeners(t, "k,v\na,1\nb,\"x\"\"", opts, []int64{1, 3}))

	path := writeFile(t, "open.csv", content)
	s, err := csvSplitSource(path, opts, nil, csvBlockSize, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	bt := s.(*blockText)
	open := int64(strings.Index(content, "open,"))
	resume := open + int64(len("open,\"never closed\n"))
	for b := range bt.Blocks() {
		lo := 4 + int64(b)*64 // the threshold
		if lo <= open {
			continue
		}
		want := max(lo, resume)
		if want > resume { // the first line start at or after lo
			want = int64(strings.IndexByte(content[want-1:], '\n')) + want
		}
		if bt.x.starts[b] != want {
			t.Errorf("block %d (threshold %d) starts at %d, want %d", b, lo, bt.x.starts[b], want)
		}
	}
}

// Random CSV files from fragments that exercise the quote checks, read by
// blocks of random tiny sizes, equal the sequential reader's.
func TestCSVBlocksProperty(t *testing.T) {
	fields := []string{"a", "12", "-3", "", "\"x\"\"y\"", "\"multi\nline\"", "\"q,c\"", "\"\"", "b\"ad", "\"oops\"x",
		"x\r", "\"cr\r\nlf\"", "\"a\"\r", "7", "\"open", "\"open\nstill", "\"three\nlong\nlines\""}
	opts := CSVOptions{Header: true, Columns: []core.Field{{Name: "k", Type: core.String}, {Name: "v", Type: core.Int64}}}
	rapid.Check(t, func(rt *rapid.T) {
		var b strings.Builder
		if rapid.Bool().Draw(rt, "bom") {
			b.WriteString("\ufeff")
		}
		b.WriteString("k,v\n")
		n := rapid.IntRange(0, 25).Draw(rt, "records")
		for i := range n {
			nf := rapid.IntRange(1, 3).Draw(rt, fmt.Sprint("fields", i))
			for j := range nf {
				if j > 0 {
					b.WriteByte(',')
				}
				b.WriteString(rapid.SampledFrom(fields).Draw(rt, "field"))
			}
			b.WriteString(rapid.SampledFrom([]string{"\n", "\r\n", "\n\n"}).Draw(rt, "end"))
		}
		if rapid.Bool().Draw(rt, "open") {
			b.WriteString("z,\"open")
		}
		size := int64(rapid.IntRange(1, 24).Draw(rt, "size"))
		content := b.String()
		path := filepath.Join(t.TempDir(), "r.csv")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			rt.Fatal(err)
		}
		// Small limits, so that open fields pass them within the file.
		o := opts
		o.MaxQuotedLines = rapid.IntRange(1, 4).Draw(rt, "max lines")
		o.MaxQuotedBytes = int64(rapid.IntRange(1, 40).Draw(rt, "max bytes"))
		for _, mode := range []core.ErrorMode{core.Skip, core.DeadLetter} {
			want := readNext(t, func(errs *core.ErrorPolicy) (core.Source, error) {
				o := o
				o.Reader = strings.NewReader(content)
				return CSV(path, o, errs)
			}, mode)
			m := rapid.IntRange(1, 4).Draw(rt, "workers")
			got, _ := readByBlocks(t, func(errs *core.ErrorPolicy) (core.Source, error) {
				return csvSplitSource(path, o, errs, 5, size)
			}, mode, m)
			if d := got.diff(want); d != "" {
				rt.Fatalf("%q, blocks of %d, %d workers: %s", content, size, m, d)
			}
		}
	})
}

var jsonlFields = []core.Field{{Name: "k", Type: core.String}, {Name: "v", Type: core.Int64}}

// JSON lines: blank lines, CRLF, a byte order mark, a line longer than
// many blocks, malformed lines and no final '\n'.
func TestJSONLBlocksSameAsSequential(t *testing.T) {
	long := strings.Repeat("y", 200)
	body := "\ufeff{\"k\":\"a\",\"v\":1}\r\n" +
		"\r\n" +
		"{\"k\":\"b\\nc\",\"v\":2}\n" +
		"{\"k\":\"bad\",\"v\":\"x\"}\n" +
		"\n   \n" +
		"{\"k\":\"" + long + "\",\"v\":3}\n" +
		"not json\n" +
		"{\"k\":\"d\",\"v\":4,\"extra\":[1,{\"a\":\"}\"}]}\n" +
		"{\"k\":\"e\"}\n" +
		"{\"k\":\"f\",\"v\":5}"
	checkTextBlocks(t, jsonlOpeners(t, body, jsonlFields, blockSizes))
}

func TestJSONLBlocksProperty(t *testing.T) {
	lines := []string{`{"k":"a","v":1}`, `{"k":"x\ny","v":-2}`, `{"v":3,"k":"é"}`, `{"k":"a"}`, `{"k":1,"v":1}`, `nope`, ``, `  `, `{"k":"q","v":1.5}`}
	rapid.Check(t, func(rt *rapid.T) {
		var b strings.Builder
		if rapid.Bool().Draw(rt, "bom") {
			b.WriteString("\ufeff")
		}
		n := rapid.IntRange(0, 25).Draw(rt, "lines")
		for i := range n {
			if i > 0 {
				b.WriteString(rapid.SampledFrom([]string{"\n", "\r\n"}).Draw(rt, "end"))
			}
			b.WriteString(rapid.SampledFrom(lines).Draw(rt, "line"))
		}
		if rapid.Bool().Draw(rt, "final") {
			b.WriteString("\n")
		}
		content := b.String()
		path := filepath.Join(t.TempDir(), "r.jsonl")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			rt.Fatal(err)
		}
		size := int64(rapid.IntRange(1, 24).Draw(rt, "size"))
		m := rapid.IntRange(1, 4).Draw(rt, "workers")
		want := readNext(t, func(errs *core.ErrorPolicy) (core.Source, error) {
			return JSONL(path, jsonlFields, nil, strings.NewReader(content), errs)
		}, core.DeadLetter)
		got, _ := readByBlocks(t, func(errs *core.ErrorPolicy) (core.Source, error) {
			return jsonlSource(path, jsonlFields, nil, nil, errs, size)
		}, core.DeadLetter, m)
		if d := got.diff(want); d != "" {
			rt.Fatalf("%q, blocks of %d, %d workers: %s", content, size, m, d)
		}
	})
}

// Only regular files are split: a reader given in place of the file
// (stdin) is read with Next. Blocks are fixed by the input: the same file
// gives the same starts whatever else differs, and ReadBlock refuses a
// block out of range.
func TestTextBlocksWhatSplits(t *testing.T) {
	path := writeFile(t, "in.csv", "k,v\na,1\nb,2\n")
	opts := CSVOptions{Header: true}
	s, err := CSV(path, CSVOptions{Header: true, Reader: strings.NewReader("k,v\na,1\n")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(core.Splittable); ok {
		t.Errorf("a CSV source over a reader is splittable")
	}
	s.Close()
	j, err := JSONL("stdin", jsonlFields, nil, strings.NewReader("{}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := j.(core.Splittable); ok {
		t.Errorf("a JSONL source over a reader is splittable")
	}
	j.Close()
	for _, par := range []int{1, 4} {
		opts.Parallelism = par
		s, err := csvSplitSource(path, opts, nil, 1, 3)
		if err != nil {
			t.Fatal(err)
		}
		sp := s.(core.Splittable)
		if sp.Blocks() != 3 { // 8 bytes of records in blocks of 3
			t.Errorf("parallelism %d: %d blocks, want 3", par, sp.Blocks())
		}
		err = sp.ReadBlock(context.Background(), 3, nil, func(*core.Batch) error { return nil })
		if err == nil || !strings.Contains(err.Error(), "no block 3 (3 in the file)") {
			t.Errorf("block 3: %v", err)
		}
		s.Close()
	}
	empty := writeFile(t, "empty.csv", "k,v\n")
	s, err = CSV(empty, CSVOptions{Header: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.(core.Splittable).Blocks(); n != 0 {
		t.Errorf("a header alone: %d blocks", n)
	}
	s.Close()
}

// ReadBlock stops with the emit function's error and with ctx's.
func TestTextBlocksStop(t *testing.T) {
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "{\"k\":\"k%d\",\"v\":%d}\n", i%7, i)
	}
	path := writeFile(t, "in.jsonl", b.String())
	s, err := jsonlSource(path, jsonlFields, nil, nil, nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sp := s.(core.Splittable)
	stop := errors.New("stop")
	err = sp.ReadBlock(context.Background(), 0, nil, func(bt *core.Batch) error { bt.Release(); return stop })
	if err != stop {
		t.Errorf("emit's error: got %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sp.ReadBlock(ctx, 0, nil, func(bt *core.Batch) error { bt.Release(); return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v", err)
	}
}
