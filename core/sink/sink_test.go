package sink

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"pgregory.net/rapid"

	"streamd/core"
)

var schema = core.MustSchema(
	core.Field{Name: "s", Type: core.String},
	core.Field{Name: "i", Type: core.Int64},
	core.Field{Name: "f", Type: core.Float64},
	core.Field{Name: "b", Type: core.Bool},
	core.Field{Name: "t", Type: core.Timestamp},
)

var edgeStrings = []string{
	"", "plain", "a,b", `he said "hi"`, `"`, `""`, "line\nbreak", "cr\rx", "crlf\r\n", " leading space", "trailing ",
	"unicode é 😀 中文", "tab\tsep", "semi;colon", "colon:x", "§sect", "\u2028\u2029", "ctl\x01\x1f", "back\\slash", "null",
}

type rec struct {
	s string
	i int64
	f float64
	b bool
	t int64
}

func records() []rec {
	floats := []float64{0, 0.1, -2.5, 1e21, 1e-7, -1e300, math.MaxFloat64, math.SmallestNonzeroFloat64, 123456789.125}
	ints := []int64{0, 1, -1, math.MaxInt64, math.MinInt64, 42}
	times := []int64{0, 978307260000000000, 978307260123456789, -86400e9 - 1, 1}
	var rs []rec
	for k, s := range edgeStrings {
		rs = append(rs, rec{s, ints[k%len(ints)], floats[k%len(floats)], k%2 == 0, times[k%len(times)]})
	}
	return rs
}

func batchOf(s *core.Schema, rs []rec) *core.Batch {
	b := core.NewBatch(s)
	for _, r := range rs {
		row := b.Append(0, 0, core.NoTime, 0)
		row[0], row[1], row[2], row[3], row[4] = core.StringValue(r.s), core.IntValue(r.i), core.FloatValue(r.f), core.BoolValue(r.b), core.TimeValue(r.t)
	}
	return b
}

func writeAll(t *testing.T, k core.Sink, s *core.Schema, batches ...*core.Batch) {
	t.Helper()
	if err := k.Open(s); err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		if err := k.Write(b); err != nil {
			t.Fatal(err)
		}
		b.Release()
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestCSVRoundTrip(t *testing.T) {
	for _, d := range []rune{',', ';', '\t', ':', '§', '-', 'e'} {
		t.Run(string(d), func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "out.csv")
			rs := records()
			writeAll(t, CSV(p, CSVOptions{Header: true, Delimiter: d}), schema, batchOf(schema, rs))
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r := csv.NewReader(f)
			r.Comma = d
			all, err := r.ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != len(rs)+1 || strings.Join(all[0], "|") != "s|i|f|b|t" {
				t.Fatalf("%d lines, header %q", len(all), all[0])
			}
			for k, w := range rs {
				got := all[k+1]
				// encoding/csv turns \r\n inside a quoted field into \n.
				want := strings.ReplaceAll(w.s, "\r\n", "\n")
				if got[0] != want {
					t.Errorf("record %d: string %q, want %q", k, got[0], want)
				}
				i, _ := strconv.ParseInt(got[1], 10, 64)
				fv, _ := strconv.ParseFloat(got[2], 64)
				bv, _ := strconv.ParseBool(got[3])
				tv, err := core.ParseTime(got[4])
				if i != w.i || fv != w.f || bv != w.b || tv != w.t || err != nil {
					t.Errorf("record %d: %q, want %+v", k, got, w)
				}
			}
		})
	}
}

func TestCSVText(t *testing.T) {
	var out bytes.Buffer
	k, _ := Stdout("csv", &out, CSVOptions{Header: true})
	writeAll(t, k, schema, batchOf(schema, []rec{
		{"a,b", -3, 0.5, true, 978307200000000000},
		{`q"q`, 7, math.NaN(), false, 978307200000000001},
	}))
	want := "s,i,f,b,t\n" +
		`"a,b",-3,0.5,true,2001-01-01T00:00:00Z` + "\n" +
		`"q""q",7,NaN,false,2001-01-01T00:00:00.000000001Z` + "\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestCSVOneEmptyField(t *testing.T) {
	s := core.MustSchema(core.Field{Name: "s", Type: core.String})
	b := core.NewBatch(s)
	for _, v := range []string{"", "x", ""} {
		b.Append(0, 0, core.NoTime, 0)[0] = core.StringValue(v)
	}
	var out bytes.Buffer
	k, _ := Stdout("csv", &out, CSVOptions{})
	writeAll(t, k, s, b)
	all, err := csv.NewReader(&out).ReadAll()
	if err != nil || len(all) != 3 || all[0][0] != "" || all[1][0] != "x" {
		t.Fatalf("%q %v", all, err)
	}
}

func TestJSONLRoundTrip(t *testing.T) {
	s := core.MustSchema(
		core.Field{Name: "s", Type: core.String},
		core.Field{Name: "i", Type: core.Int64},
		core.Field{Name: "f", Type: core.Float64},
		core.Field{Name: "b", Type: core.Bool},
		core.Field{Name: `t "when"`, Type: core.Timestamp},
	)
	rs := records()
	rs = append(rs, rec{"bad \xff utf8 \xc3", 1, math.NaN(), true, 0}, rec{"inf", 2, math.Inf(-1), false, 0})
	p := filepath.Join(t.TempDir(), "out.jsonl")
	writeAll(t, JSONL(p), s, batchOf(s, rs))
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	k := 0
	for ; sc.Scan(); k++ {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte(`{"s":`)) || !bytes.Contains(line, []byte(`,"t \"when\"":"`)) {
			t.Fatalf("line %d: members out of order: %s", k, line)
		}
		d := json.NewDecoder(bytes.NewReader(line))
		d.UseNumber()
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			t.Fatalf("line %d: %v: %s", k, err, line)
		}
		w := rs[k]
		if got, want := m["s"], strings.ToValidUTF8(w.s, "\uFFFD"); got != want {
			t.Errorf("line %d: s %q, want %q", k, got, want)
		}
		if m["i"].(json.Number).String() != strconv.FormatInt(w.i, 10) || m["b"] != w.b {
			t.Errorf("line %d: %s", k, line)
		}
		if math.IsNaN(w.f) || math.IsInf(w.f, 0) {
			if m["f"] != nil {
				t.Errorf("line %d: non-finite float as %v", k, m["f"])
			}
		} else if fv, _ := m["f"].(json.Number).Float64(); fv != w.f {
			t.Errorf("line %d: f %v, want %v", k, m["f"], w.f)
		}
		if tv, err := core.ParseTime(m[`t "when"`].(string)); err != nil || tv != w.t {
			t.Errorf("line %d: t %v, want %d", k, m[`t "when"`], w.t)
		}
	}
	if k != len(rs) {
		t.Fatalf("%d lines, want %d", k, len(rs))
	}
}

// TestJSONEscapingMatchesEncodingJSON: strings and floats come out exactly
// as encoding/json writes them (without HTML escaping).
func TestJSONEscapingMatchesEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(rapid.String(), rapid.StringOf(rapid.RuneFrom([]rune{'\u2028', '\u2029', '"', '\\', '\n', '\r', '\t', 0, 0x1f, 0x7f, '<', '&', 'é', '😀', '\uFFFD'})),
			rapid.Map(rapid.SliceOf(rapid.Byte()), func(b []byte) string { return string(b) })).Draw(t, "s")
		var want bytes.Buffer
		e := json.NewEncoder(&want)
		e.SetEscapeHTML(false)
		e.Encode(s)
		if got := appendJSONString(nil, s); string(got) != strings.TrimSuffix(want.String(), "\n") {
			t.Fatalf("%q: got %s, want %s", s, got, want.String())
		}
		f := rapid.Float64().Draw(t, "f")
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return
		}
		wf, _ := json.Marshal(f)
		if got := appendJSONFloat(nil, f); string(got) != string(wf) {
			t.Fatalf("%v: got %s, want %s", f, got, wf)
		}
	})
}

func TestAtomicFile(t *testing.T) {
	dir := t.TempDir()
	final := filepath.Join(dir, "out.csv")
	k := CSV(final, CSVOptions{Header: true})
	if err := k.Open(schema); err != nil {
		t.Fatal(err)
	}
	for range 2000 { // beyond the buffer: the temporary file gets written
		if err := k.Write(batchOf(schema, records())); err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if _, err := os.Stat(final); !errors.Is(err, os.ErrNotExist) || len(entries) != 1 || !strings.HasPrefix(entries[0].Name(), ".out.csv.tmp-") {
		t.Fatalf("before Close: stat %v, entries %v", err, entries)
	}
	if info, _ := entries[0].Info(); info.Size() == 0 {
		t.Fatal("nothing written to the temporary file")
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	entries, _ = os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "out.csv" {
		t.Fatalf("after Close: %v", entries)
	}
	data, _ := os.ReadFile(final)
	all, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil || len(all) != 1+2000*len(records()) {
		t.Fatalf("%d records, %v", len(all), err)
	}
	if err := k.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	k.Abort() // after Close: no effect
	if _, err := os.Stat(final); err != nil {
		t.Fatal("Abort after Close removed the output")
	}
	if err := k.Write(batchOf(schema, records())); err == nil {
		t.Fatal("Write after Close: no error")
	}
}

func TestAbort(t *testing.T) {
	for _, mk := range []func(string) core.Sink{
		func(p string) core.Sink { return CSV(p, CSVOptions{Header: true}) },
		JSONL,
	} {
		dir := t.TempDir()
		final := filepath.Join(dir, "out")
		os.WriteFile(final, []byte("earlier output\n"), 0o644)
		k := mk(final)
		if err := k.Open(schema); err != nil {
			t.Fatal(err)
		}
		for range 1000 {
			k.Write(batchOf(schema, records()))
		}
		k.Abort()
		k.Abort()
		entries, _ := os.ReadDir(dir)
		data, _ := os.ReadFile(final)
		if len(entries) != 1 || string(data) != "earlier output\n" {
			t.Fatalf("after Abort: %v, %q", entries, data)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	for _, tc := range []struct {
		name string
		sink core.Sink
		want string
	}{
		{"missing dir", CSV(filepath.Join(dir, "no", "out.csv"), CSVOptions{}), "csv sink " + filepath.Join(dir, "no", "out.csv") + ": create temporary file in " + filepath.Join(dir, "no")},
		{"parent is a file", JSONL(filepath.Join(file, "out.jsonl")), "not a directory"},
		{"directory", CSV(dir+"/", CSVOptions{}), "names a directory"},
		{"delimiter", CSV(filepath.Join(dir, "x.csv"), CSVOptions{Delimiter: '\n'}), "invalid delimiter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.sink.Open(schema)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			tc.sink.Abort()
		})
	}
	if os.Geteuid() != 0 { // root writes anywhere
		ro := filepath.Join(dir, "ro")
		os.Mkdir(ro, 0o500)
		err := CSV(filepath.Join(ro, "out.csv"), CSVOptions{}).Open(schema)
		if err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Fatalf("read-only dir: %v", err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("left behind: %v", entries)
	}
	k := CSV(filepath.Join(dir, "x.csv"), CSVOptions{})
	if err := k.Write(batchOf(schema, nil)); err == nil {
		t.Fatal("Write before Open: no error")
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	w.n++
	return 0, errors.New("disk full")
}

func TestStdout(t *testing.T) {
	var out bytes.Buffer
	k, err := Stdout("jsonl", &out, CSVOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k.Open(schema)
	k.Write(batchOf(schema, records()[:2]))
	// Stdout is written batch by batch: a slow input is not held back.
	if got := strings.Count(out.String(), "\n"); got != 2 {
		t.Fatalf("%d lines after the first batch, want 2", got)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out.String(), "\n"); got != 2 {
		t.Fatalf("%d lines", got)
	}
	if _, err := Stdout("xml", &out, CSVOptions{}); err == nil {
		t.Fatal("unknown format: no error")
	}

	fw := &failWriter{}
	k, _ = Stdout("csv", fw, CSVOptions{})
	k.Open(schema)
	k.Write(batchOf(schema, records()))
	if err := k.Close(); err == nil || err.Error() != "csv sink stdout: disk full" {
		t.Fatalf("Close: %v", err)
	}
}

// BenchmarkCSVSink formats batches of flights-like records; one op is one
// batch of core.BatchSize records.
func BenchmarkCSVSink(b *testing.B) {
	s := core.MustSchema(
		core.Field{Name: "date", Type: core.Timestamp}, core.Field{Name: "delay", Type: core.Int64},
		core.Field{Name: "distance", Type: core.Int64}, core.Field{Name: "origin", Type: core.String},
		core.Field{Name: "destination", Type: core.String}, core.Field{Name: "ratio", Type: core.Float64})
	codes := []string{"LAS", "PHL", "ATL", "CVG", "ORD", "SFO", "JFK", "A,B"}
	batch := core.NewBatch(s)
	for i := range core.BatchSize {
		r := batch.Append(0, 0, core.NoTime, 0)
		r[0], r[1], r[2] = core.TimeValue(978307260000000000+int64(i)*60e9), core.IntValue(int64(i%300-20)), core.IntValue(int64(100+i))
		r[3], r[4], r[5] = core.StringValue(codes[i%8]), core.StringValue(codes[(i*3)%8]), core.FloatValue(float64(i)/7)
	}
	run := func(b *testing.B, k core.Sink) {
		if err := k.Open(s); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if err := k.Write(batch); err != nil {
				b.Fatal(err)
			}
		}
		if err := k.Close(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.N)*core.BatchSize/b.Elapsed().Seconds(), "records/s")
	}
	b.Run("discard", func(b *testing.B) {
		k, _ := Stdout("csv", io.Discard, CSVOptions{Header: true})
		run(b, k)
	})
	b.Run("file", func(b *testing.B) {
		run(b, CSV(filepath.Join(b.TempDir(), "out.csv"), CSVOptions{Header: true}))
	})
	// The same records as Parquet (snappy), for the ratio to CSV.
	b.Run("parquet", func(b *testing.B) {
		run(b, Parquet(filepath.Join(b.TempDir(), "out.parquet"), ParquetOptions{}))
	})
}

// A file sink never renames its output over a device, FIFO or symlink.
func TestRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(dir, "target"), link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, link} {
		k := CSV(p, CSVOptions{Header: true})
		err := k.Open(schema)
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("%s: err = %v", p, err)
		}
		if st, _ := os.Lstat(p); st.Mode().IsRegular() {
			t.Fatalf("%s was replaced by a regular file", p)
		}
	}
}

// Exactly-once parts: a crash after barrier 2 with epoch 3 half written,
// restored from checkpoint 1, rewrites epochs 2 and 3; the final file is
// the uncrashed one.
func TestEpochPartsSurviveCrash(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.csv")
	recs := records()
	write := func(k core.Sink, from, to int) {
		if err := k.Write(batchOf(schema, recs[from:to])); err != nil {
			t.Fatal(err)
		}
	}
	// The uncrashed run.
	ref := CSV(filepath.Join(dir, "ref.csv"), CSVOptions{Header: true}).(core.EpochSink)
	if err := ref.OpenEpochs(schema, 0); err != nil {
		t.Fatal(err)
	}
	write(ref, 0, 1)
	ref.Barrier(1)
	write(ref, 1, 2)
	ref.Barrier(2)
	write(ref, 2, 3)
	if err := ref.Close(); err != nil {
		t.Fatal(err)
	}
	// The crashed run.
	k := CSV(path, CSVOptions{Header: true}).(core.EpochSink)
	k.OpenEpochs(schema, 0)
	write(k, 0, 1)
	k.Barrier(1)
	write(k, 1, 2)
	k.Barrier(2)
	write(k, 2, 3)
	k.Abort()
	if _, err := os.Stat(path); err == nil {
		t.Fatal("final file exists after a crash")
	}
	// Restored from checkpoint 1: epochs 2 and 3 are produced again.
	k = CSV(path, CSVOptions{Header: true}).(core.EpochSink)
	if err := k.OpenEpochs(schema, 1); err != nil {
		t.Fatal(err)
	}
	write(k, 1, 2)
	k.Barrier(2)
	write(k, 2, 3)
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want, _ := os.ReadFile(filepath.Join(dir, "ref.csv"))
	if string(got) != string(want) || len(want) == 0 {
		t.Fatalf("after crash and restore:\n%s\nwant:\n%s", got, want)
	}
	if _, err := os.Stat(path + ".parts"); !os.IsNotExist(err) {
		t.Fatalf("parts left after Close: %v", err)
	}
}

// A restore checks the parts it keeps against the checkpoint's manifest:
// a part deleted, truncated, extended, changed in place, or one the
// checkpoint did not commit, is reported (core.ErrOutputDamaged, naming the
// part); parts of later epochs are not checked (the restore discards
// them). An intact restore carries the manifest on, so a later checkpoint
// lists the kept parts too.
func TestEpochPartsVerified(t *testing.T) {
	recs := records()
	crashed := func(t *testing.T) (string, []byte) {
		path := filepath.Join(t.TempDir(), "out.csv")
		k := CSV(path, CSVOptions{Header: true}).(core.EpochSink)
		if err := k.OpenEpochs(schema, 0); err != nil {
			t.Fatal(err)
		}
		for e := 1; e <= 3; e++ {
			if err := k.Write(batchOf(schema, recs[e-1:e])); err != nil {
				t.Fatal(err)
			}
			if err := k.Barrier(uint64(e)); err != nil {
				t.Fatal(err)
			}
		}
		m := k.(core.OutputManifest).Manifest() // checkpoint 3's
		k.Write(batchOf(schema, recs[:1]))      // epoch 4, never committed
		k.Barrier(4)
		k.Abort()
		return path, m
	}
	part := func(path string, e int) string {
		return filepath.Join(path+".parts", fmt.Sprintf("epoch-%012d", e))
	}
	verify := func(path string, m []byte, restored uint64) error {
		return CSV(path, CSVOptions{Header: true}).(core.OutputManifest).VerifyOutput(m, restored)
	}
	path, m := crashed(t)
	if lines := strings.Count(string(m), "\n"); lines != 3 {
		t.Fatalf("manifest after 3 barriers:\n%s", m)
	}
	if err := verify(path, m, 3); err != nil {
		t.Fatalf("intact output: %v", err)
	}
	damage := map[string]func(p string) error{
		"missing":   os.Remove,
		"truncated": func(p string) error { return os.Truncate(p, 3) },
		"extended": func(p string) error {
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			if err == nil {
				_, err = f.WriteString("x\n")
				f.Close()
			}
			return err
		},
		"changed": func(p string) error {
			b, err := os.ReadFile(p)
			if err == nil {
				b[len(b)-2] ^= 1
				err = os.WriteFile(p, b, 0o644)
			}
			return err
		},
	}
	for name, f := range damage {
		path, m := crashed(t)
		if err := f(part(path, 2)); err != nil {
			t.Fatal(err)
		}
		err := verify(path, m, 3)
		if !errors.Is(err, core.ErrOutputDamaged) || !strings.Contains(err.Error(), "epoch-000000000002") {
			t.Fatalf("%s part: err = %v", name, err)
		}
		// An older checkpoint keeps only parts before the damage: fine.
		if err := verify(path, keepLines(m, 1), 1); err != nil {
			t.Fatalf("%s part 2, restore from 1: %v", name, err)
		}
	}
	// A part the checkpoint did not commit, among the kept epochs.
	path, m = crashed(t)
	if err := verify(path, keepLines(m, 1), 2); !errors.Is(err, core.ErrOutputDamaged) || !strings.Contains(err.Error(), "not committed") {
		t.Fatalf("uncommitted part: err = %v", err)
	}
	// Later epochs' parts are not checked: a restore discards them.
	os.Truncate(part(path, 3), 0)
	if err := verify(path, keepLines(m, 2), 2); err != nil {
		t.Fatalf("restore from 2 with part 3 damaged: %v", err)
	}
	// Restored from 3 (verified), one more epoch: its manifest has 4 parts.
	path, m = crashed(t)
	k := CSV(path, CSVOptions{Header: true})
	if err := k.(core.OutputManifest).VerifyOutput(m, 3); err != nil {
		t.Fatal(err)
	}
	if err := k.(core.EpochSink).OpenEpochs(schema, 3); err != nil {
		t.Fatal(err)
	}
	k.Write(batchOf(schema, recs[:2]))
	k.(core.EpochSink).Barrier(4)
	m4 := k.(core.OutputManifest).Manifest()
	if !strings.HasPrefix(string(m4), string(m)) || strings.Count(string(m4), "\n") != 4 {
		t.Fatalf("manifest after restore and one more barrier:\n%s\nwant checkpoint 3's:\n%s+ one line", m4, m)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
}

// keepLines is the manifest's first n lines.
func keepLines(m []byte, n int) []byte {
	lines := strings.SplitAfter(string(m), "\n")
	return []byte(strings.Join(lines[:n], ""))
}

// Abort removes the part of the epoch in progress (in no checkpoint) and
// keeps the parts barriers made durable, for a restore.
func TestAbortRemovesOpenPart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.csv")
	k := CSV(path, CSVOptions{Header: true}).(core.EpochSink)
	if err := k.OpenEpochs(schema, 0); err != nil {
		t.Fatal(err)
	}
	write := func(n int) { // enough records to pass the buffer: the part file exists
		for range n {
			b := batchOf(schema, records())
			if err := k.Write(b); err != nil {
				t.Fatal(err)
			}
			b.Release()
		}
	}
	write(10)
	if err := k.Barrier(1); err != nil {
		t.Fatal(err)
	}
	write(2000)
	open := filepath.Join(path+".parts", partName(2))
	if _, err := os.Stat(open); err != nil {
		t.Fatalf("epoch 2's part before the abort: %v", err)
	}
	k.Abort()
	if _, err := os.Stat(open); !os.IsNotExist(err) {
		t.Fatalf("epoch 2's part after the abort: %v", err)
	}
	if _, err := os.Stat(filepath.Join(path+".parts", partName(1))); err != nil {
		t.Fatalf("epoch 1's part after the abort: %v", err)
	}
}

// Temporary files of the same destination that no process holds (a run
// killed before it could remove its own) are removed when a sink opens;
// one a live writer holds is kept.
func TestStaleTemporaryFilesRemoved(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.csv")
	stale := filepath.Join(dir, ".out.csv.tmp-123")
	if err := os.WriteFile(stale, []byte("half a file"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, ".other.csv.tmp-456") // another destination's: not ours
	if err := os.WriteFile(other, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	live := CSV(path, CSVOptions{Header: true})
	if err := live.Open(schema); err != nil { // holds its own temporary file
		t.Fatal(err)
	}
	defer live.Abort()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("stale temporary file after Open: %v", err)
	}
	second := CSV(path, CSVOptions{Header: true})
	if err := second.Open(schema); err != nil {
		t.Fatal(err)
	}
	second.Abort()
	names, _ := filepath.Glob(filepath.Join(dir, ".out.csv.tmp-*"))
	if len(names) != 1 { // the live writer's, kept
		t.Fatalf("temporary files left: %v", names)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("another destination's temporary file: %v", err)
	}
}
