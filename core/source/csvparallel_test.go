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
	"testing"

	"pgregory.net/rapid"

	"streamd/core"
)

// csvRun is everything a CSV source observably does on one input under
// one error policy: the records (Pos and values) in order, the error that
// stopped it, the policy's counts and the dead-letter file.
type csvRun struct {
	recs    []string // "line:|v|v|v"
	pos     []int64
	sizes   []int  // the batches' lengths, in order
	err     string // "" at io.EOF
	errPos  int64  // the line of the *core.RecordError that stopped it
	skipped int64
	dead    int64
	letters string
	// Of a parallel source: whether it read on sequentially after a
	// quoting or read error.
	parallel, fell bool
}

// runCSV reads the CSV file at path to its end (or its first error) with
// the given parallelism and block size.
func runCSV(t testing.TB, path string, opts CSVOptions, mode core.ErrorMode, k, blockSize int) csvRun {
	t.Helper()
	dl := filepath.Join(t.TempDir(), "dead.jsonl")
	errs, err := core.NewErrorPolicy(mode, dl)
	if err != nil {
		t.Fatal(err)
	}
	opts.Parallelism = k
	var run csvRun
	s, err := csvSource(path, opts, errs, blockSize)
	if err != nil {
		run.err = "open: " + err.Error()
		return run
	}
	types := s.Schema().Fields
	var text []byte
	for {
		b, err := s.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			run.err = err.Error()
			var re *core.RecordError
			if errors.As(err, &re) {
				run.errPos = re.Pos
			}
			break
		}
		if b.Len == 0 {
			t.Fatal("empty batch")
		}
		run.sizes = append(run.sizes, b.Len)
		for i := range b.Len {
			text = fmt.Appendf(text[:0], "%d:", b.Pos[i])
			for j, v := range b.Row(i) {
				text = append(text, '|')
				text = core.AppendText(text, types[j].Type, v)
			}
			run.recs = append(run.recs, string(text))
			run.pos = append(run.pos, b.Pos[i])
		}
		b.Release()
	}
	if p, ok := s.(*csvParallel); ok {
		run.parallel, run.fell = true, p.fall != nil
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := errs.Close(); err != nil {
		t.Fatal(err)
	}
	run.skipped, run.dead = errs.Skipped.Load(), errs.DeadLettered.Load()
	if d, err := os.ReadFile(dl); err == nil {
		run.letters = string(d)
	}
	return run
}

// sameRun reports how par differs from seq, or "": the same records, in
// batches of the same lengths (where a batch ends moves the watermark),
// the same error, the same counts and dead letters.
func sameRun(seq, par csvRun) string {
	if seq.err != par.err {
		return fmt.Sprintf("error %q, sequential %q", par.err, seq.err)
	}
	if seq.skipped != par.skipped || seq.dead != par.dead {
		return fmt.Sprintf("%d skipped, %d dead letters; sequential %d, %d", par.skipped, par.dead, seq.skipped, seq.dead)
	}
	if seq.letters != par.letters {
		return fmt.Sprintf("dead letters\n%s\nsequential\n%s", par.letters, seq.letters)
	}
	if len(par.recs) != len(seq.recs) {
		return fmt.Sprintf("%d records, sequential %d", len(par.recs), len(seq.recs))
	}
	for i := range par.recs {
		if par.recs[i] != seq.recs[i] {
			return fmt.Sprintf("record %d: %q, sequential %q", i, par.recs[i], seq.recs[i])
		}
	}
	if !slices.Equal(par.sizes, seq.sizes) {
		return fmt.Sprintf("batches of %v, sequential %v", par.sizes, seq.sizes)
	}
	return ""
}

var csvModes = []core.ErrorMode{core.Fail, core.Skip, core.DeadLetter}

// checkParallelCSV compares the parallel source with the sequential one on
// content, for every policy, worker count and block size given. It
// returns whether any parallel run fell back to the sequential reader.
func checkParallelCSV(t *testing.T, content string, opts CSVOptions, ks, blockSizes []int) (fell bool) {
	t.Helper()
	path := writeFile(t, "in.csv", content)
	for _, mode := range csvModes {
		seq := runCSV(t, path, opts, mode, 1, len(content)+1)
		if seq.parallel {
			t.Fatal("parallelism 1 gave a parallel source")
		}
		for _, k := range ks {
			for _, bs := range blockSizes {
				par := runCSV(t, path, opts, mode, k, bs)
				if !par.parallel && len(content) > bs && !strings.HasPrefix(seq.err, "open:") {
					t.Fatalf("k=%d block %d: not a parallel source", k, bs)
				}
				d := sameRun(seq, par)
				if d != "" {
					t.Fatalf("policy %v, %d workers, block %d bytes: %s", mode, k, bs, d)
				}
				fell = fell || par.fell
			}
		}
	}
	return fell
}

var (
	tinyBlocks = []int{1, 2, 3, 5, 8, 13, 32, 100}
	workers    = []int{2, 3, 4}
)

func TestCSVParallelSameAsSequential(t *testing.T) {
	two := []core.Field{{Name: "origin", Type: core.String}, {Name: "delay", Type: core.Int64}}
	for _, tc := range []struct {
		name    string
		content string
		opts    CSVOptions
		fall    bool // a quoting error makes the parallel source fall back
	}{
		{"plain", "origin,delay\nLAS,1\nPHL,2\nATL,3\nSFO,4\nJFK,5\n", CSVOptions{Header: true, Columns: two}, false},
		{"flights", flightsCSV, CSVOptions{Header: true, Columns: flightFields}, false},
		{"malformed", badCSV, CSVOptions{Header: true, Columns: two}, true},
		{"bare quote only", "origin,delay\nLAS,1\nB\"OS,2\nORD,3\nATL,4\n", CSVOptions{Header: true, Columns: two}, true},
		{"type and count errors", "origin,delay\nLAS,x\nPHL,2,3\n\nATL,3\nSFO\nJFK,5\n", CSVOptions{Header: true, Columns: two}, false},
		{"multi-line quoted", "origin,delay\n\"L\nA\nS\",1\n\"P\"\"H\n\"\"L\",2\n\"\n\n\",3\nJFK,\"4\"\n", CSVOptions{Header: true, Columns: two}, false},
		{"escaped quotes and newlines", "a,b\n\"\"\"\",\"x\n\"\"\n\"\"y\"\n\"\",\"\"\n\"\n\"\"\n\",z\n", CSVOptions{Header: true}, false},
		{"CRLF", "origin,delay\r\nLAS,1\r\n\r\n\"PH\r\nL\",2\r\nATL,3\r\nSFO,4", CSVOptions{Header: true, Columns: two}, false},
		{"CR before EOF", "origin,delay\r\nLAS,1\r\nATL,3\r", CSVOptions{Header: true, Columns: two}, false},
		{"empty lines", "\n\norigin,delay\n\n\nLAS,1\n\n\nPHL,2\n\n", CSVOptions{Header: true, Columns: two}, false},
		{"BOM header", "\uFEFForigin,delay\nLAS,1\nPHL,2\nATL,3\n", CSVOptions{Header: true, Columns: two}, false},
		{"no header", "LAS,1\nPHL,2\n\"AT\nL\",3\nSFO,4\n", CSVOptions{Columns: two}, false},
		{"delimiter", "origin;delay\nLAS;1\n\"P;H\nL\";2\nATL;3\n", CSVOptions{Header: true, Columns: two, Delimiter: ';'}, false},
		{"long record", "origin,delay\nLAS,1\n\"" + strings.Repeat("x\n\"\",", 40) + "\",2\nATL,3\n", CSVOptions{Header: true, Columns: two}, false},
		{"quote open at EOF", "origin,delay\nLAS,1\nPHL,2\n\"ATL,3\nSFO,4\n", CSVOptions{Header: true, Columns: two}, true},
		{"extraneous quote", "origin,delay\nLAS,1\n\"PH\"L,2\nATL,3\n\"SF\"\"O\",4\n", CSVOptions{Header: true, Columns: two}, true},
		{"quote after a newline in a field", "a,b\nx,\"1\n2\"\n\"q\"r,s\nt,u\n", CSVOptions{Header: true}, true},
		{"no final newline", "origin,delay\nLAS,1\nPHL,2", CSVOptions{Header: true, Columns: two}, false},
		{"header only", "origin,delay\n", CSVOptions{Header: true, Columns: two}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fell := checkParallelCSV(t, tc.content, tc.opts, workers, tinyBlocks)
			if fell != tc.fall {
				t.Errorf("fell back to the sequential reader: %v, want %v", fell, tc.fall)
			}
		})
	}
}

// TestCSVParallelProperty compares the parallel source with the
// sequential one on random CSV text: quoted and unquoted fields with
// commas, quotes, CR and LF in them, empty lines, fields that are not
// int64, wrong field counts and malformed quoting, under random block
// sizes, worker counts and policies.
func TestCSVParallelProperty(t *testing.T) {
	opts := CSVOptions{Header: true, Columns: []core.Field{{Name: "s", Type: core.String}, {Name: "n", Type: core.Int64}}}
	rapid.Check(t, func(rt *rapid.T) {
		var sb strings.Builder
		sb.WriteString("n,s,x\n")
		field := func() string {
			switch rapid.IntRange(0, 9).Draw(rt, "kind") {
			case 0:
				return "" // empty
			case 1:
				return "abc" // not an int64
			case 2:
				return `"` + rapid.StringOf(rapid.SampledFrom([]rune("a,\n\r1"))).Draw(rt, "quoted") + `"`
			case 3:
				return `"a""b` + "\n" + `"`
			case 4:
				return rapid.SampledFrom([]string{`a"b`, `"a"b`, `"a`, `""`, `"""`}).Draw(rt, "quirk") // often malformed
			default:
				return fmt.Sprint(rapid.IntRange(-99, 999).Draw(rt, "n"))
			}
		}
		rows := rapid.IntRange(0, 40).Draw(rt, "rows")
		for range rows {
			switch rapid.IntRange(0, 9).Draw(rt, "row") {
			case 0:
				sb.WriteString("\n")
				continue
			case 1:
				sb.WriteString(field()) // one field
			case 2:
				sb.WriteString(field() + "," + field() + "," + field() + "," + field())
			default:
				sb.WriteString(field() + "," + field() + "," + field())
			}
			sb.WriteString(rapid.SampledFrom([]string{"\n", "\n", "\n", "\r\n"}).Draw(rt, "eol"))
		}
		content := sb.String()
		mode := rapid.SampledFrom(csvModes).Draw(rt, "mode")
		k := rapid.IntRange(2, 5).Draw(rt, "workers")
		bs := rapid.IntRange(1, 64).Draw(rt, "block")

		dir, err := os.MkdirTemp("", "csvprop")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "in.csv")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			rt.Fatal(err)
		}
		seq := runCSV(t, path, opts, mode, 1, bs)
		par := runCSV(t, path, opts, mode, k, bs)
		if d := sameRun(seq, par); d != "" {
			rt.Fatalf("input %q: %s", content, d)
		}
	})
}

// genCSV returns a flights-like CSV text of n records (a header line
// first); every bad-th record (0: none) has a delay that is not an int64.
func genCSV(n, bad int) string {
	var sb strings.Builder
	sb.WriteString("date,delay,distance,origin,destination,note\n")
	codes := []string{"LAS", "PHL", "ATL", "SFO", "JFK", "ORD", "BOS", "DEN"}
	for i := range n {
		delay := fmt.Sprint(i%97 - 20)
		if bad > 0 && i%bad == bad-1 {
			delay = "late"
		}
		note := "ok"
		if i%13 == 0 {
			note = "\"said \"\"hi\"\",\nthen left\""
		}
		fmt.Fprintf(&sb, "2001-01-%02dT%02d:%02d:00Z,%s,%d,%s,%s,%s\n", 1+i%28, i%24, i%60, delay, 100+i%3000, codes[i%8], codes[(i/8)%8], note)
	}
	return sb.String()
}

var genFields = []core.Field{
	{Name: "date", Type: core.Timestamp},
	{Name: "delay", Type: core.Int64},
	{Name: "distance", Type: core.Int64},
	{Name: "origin", Type: core.String},
	{Name: "destination", Type: core.String},
}

// TestCSVParallelManyBlocks runs a few thousand records, some malformed,
// through blocks of a few KiB: batches fill and end mid-block, and blocks
// end inside multi-line quoted fields.
func TestCSVParallelManyBlocks(t *testing.T) {
	content := genCSV(5000, 777)
	if fell := checkParallelCSV(t, content, CSVOptions{Header: true, Columns: genFields}, []int{2, 4}, []int{1000, 4096, 20000}); fell {
		t.Error("fell back to the sequential reader on well-formed quoting")
	}
}

func TestCSVParallelism(t *testing.T) {
	if n := csvParallelism(0); n < 1 || n > 4 {
		t.Errorf("auto parallelism %d", n)
	}
	if n := csvParallelism(3); n != 3 {
		t.Errorf("parallelism 3 → %d", n)
	}
	_, err := CSV(writeFile(t, "a.csv", "a\n1\n"), CSVOptions{Header: true, Parallelism: -1}, nil)
	if err == nil || !strings.Contains(err.Error(), "parallelism -1") {
		t.Fatalf("negative parallelism: %v", err)
	}
	// Small files, readers and parallelism 1 read sequentially.
	big := writeFile(t, "big.csv", genCSV(40000, 0))
	for _, tc := range []struct {
		name     string
		path     string
		opts     CSVOptions
		parallel bool
	}{
		{"small file", writeFile(t, "small.csv", genCSV(10, 0)), CSVOptions{Header: true, Parallelism: 4}, false},
		{"reader", "", CSVOptions{Header: true, Parallelism: 4, Reader: strings.NewReader(genCSV(40000, 0))}, false},
		{"parallelism 1", big, CSVOptions{Header: true, Parallelism: 1}, false},
		{"parallelism 2", big, CSVOptions{Header: true, Parallelism: 2}, true},
	} {
		s, err := CSV(tc.path, tc.opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := s.(*csvParallel); ok != tc.parallel {
			t.Errorf("%s: parallel %v, want %v", tc.name, ok, tc.parallel)
		}
		s.Close()
	}
}

// TestCSVParallelCloseAndCancel stops the source in every state: before the
// first Next, mid-file with results queued, after a fallback, at the end.
// TestMain's goleak check fails if a goroutine is left behind.
func TestCSVParallelCloseAndCancel(t *testing.T) {
	path := writeFile(t, "in.csv", genCSV(3000, 0))
	opts := CSVOptions{Header: true, Columns: genFields, Parallelism: 3}
	open := func(path string) core.Source {
		s, err := csvSource(path, opts, nil, 2048)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := s.(*csvParallel); !ok {
			t.Fatal("not a parallel source")
		}
		return s
	}

	s := open(path)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Next(ctx); !errors.Is(err, errClosed) {
		t.Fatalf("Next after Close: %v", err)
	}

	// Mid-file: a cancelled ctx stops Next, not the source.
	s = open(path)
	b, err := s.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Next(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next with a cancelled ctx: %v", err)
	}
	if b, err = s.Next(ctx); err != nil {
		t.Fatalf("Next after a cancelled Next: %v", err)
	}
	b.Release()
	s.Close()
	s.Close()
	if _, err := s.Next(ctx); !errors.Is(err, errClosed) {
		t.Fatalf("Next after Close: %v", err)
	}

	// After a fallback to the sequential reader.
	s = open(writeFile(t, "bad.csv", strings.Replace(genCSV(3000, 0), "LAS,", "L\"AS,", 1)))
	_, err = s.Next(ctx)
	var re *core.RecordError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), `bare "`) {
		t.Fatalf("bare quote: %v", err)
	}
	if s.(*csvParallel).fall == nil {
		t.Fatal("no fallback")
	}
	s.Close()

	// At the end.
	s = open(path)
	rows, _ := drain(t, s)
	if len(rows) != 3000 {
		t.Fatalf("%d rows", len(rows))
	}
	if _, err := s.Next(ctx); err != io.EOF {
		t.Fatalf("Next after the end: %v", err)
	}
	s.Close()
}

// TestCSVParallelReplay restores a parallel source at a record count: the
// records after it are the sequential source's.
func TestCSVParallelReplay(t *testing.T) {
	path := writeFile(t, "in.csv", genCSV(3000, 500))
	errs, _ := core.NewErrorPolicy(core.Skip, "")
	seq, err := CSV(path, CSVOptions{Header: true, Columns: genFields, Parallelism: 1}, errs)
	if err != nil {
		t.Fatal(err)
	}
	_, want := drain(t, seq)
	seq.Close()
	for _, skip := range []int64{0, 1, 511, 512, 1234, int64(len(want))} {
		s, err := csvSource(path, CSVOptions{Header: true, Columns: genFields, Parallelism: 3}, errs, 4096)
		if err != nil {
			t.Fatal(err)
		}
		r := core.NewReplayable(s)
		if err := r.Skip(skip); err != nil {
			t.Fatal(err)
		}
		_, pos := drain(t, r)
		r.Close()
		if fmt.Sprint(pos) != fmt.Sprint(want[skip:]) {
			t.Fatalf("skip %d: lines %v…, want %v…", skip, pos[:min(5, len(pos))], want[skip:min(skip+5, int64(len(want)))])
		}
	}
}

func TestRecordCut(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", -1},
		{"abc", -1},
		{"a\nb", 2},
		{"a\nb\n", 4},
		{"a\r\nb", 3},
		{"\"a\nb", -1},           // the '\n' is quoted
		{"\"a\nb\",c\nd", 8},     // the second '\n' ends the record
		{"x\n\"a\nb", 2},         // the last whole record ends at the first '\n'
		{"\"\"\"\n\"\n", 6},      // """\n" is one field
		{"\"a\"\"\nb\"\n\"c", 8}, // "" keeps the parity
	} {
		if got := recordCut([]byte(tc.in)); got != tc.want {
			t.Errorf("recordCut(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// BenchmarkCSVFile reads a generated 200,000-record CSV file (about 12 MB,
// flights-like, 5 typed columns) with the sequential reader and with the
// parallel one (auto parallelism); one op is one pass over the file. Both
// must give the same records: the benchmark checks a digest of them first.
func BenchmarkCSVFile(b *testing.B) {
	path := writeFile(b, "flights.csv", genCSV(200_000, 0))
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	pass := func(b *testing.B, k int, digest bool) (records int64, sum uint64) {
		s, err := CSV(path, CSVOptions{Header: true, Columns: genFields, Parallelism: k}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		var text []byte
		for {
			batch, err := s.Next(ctx)
			if err == io.EOF {
				return records, sum
			}
			if err != nil {
				b.Fatal(err)
			}
			records += int64(batch.Len)
			for i := 0; digest && i < batch.Len; i++ {
				text = fmt.Appendf(text[:0], "%d", batch.Pos[i])
				for j, v := range batch.Row(i) {
					text = core.AppendText(append(text, '|'), genFields[j].Type, v)
				}
				for _, c := range text { // FNV-1a, order-sensitive
					sum = (sum ^ uint64(c)) * 1099511628211
				}
			}
			batch.Release()
		}
	}
	n1, d1 := pass(b, 1, true)
	n2, d2 := pass(b, 0, true)
	if n1 != 200_000 || n1 != n2 || d1 != d2 {
		b.Fatalf("sequential: %d records, digest %x; parallel: %d, %x", n1, d1, n2, d2)
	}
	for _, bc := range []struct {
		name string
		k    int
	}{{"sequential", 1}, {"parallel", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			var records int64
			b.ReportAllocs()
			b.SetBytes(st.Size())
			for range b.N {
				n, _ := pass(b, bc.k, false)
				records += n
			}
			b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
