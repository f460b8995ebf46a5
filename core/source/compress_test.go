package source

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"

	"streamd/core"
)

// compressed returns content compressed with c (gzip, zstd, xz; bzip2 has
// no writer in Go and comes from testdata).
func compressed(t testing.TB, c Compression, content []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	var err error
	switch c {
	case CompressionGzip:
		w = gzip.NewWriter(&buf)
	case CompressionZstd:
		w, err = zstd.NewWriter(&buf)
	case CompressionXz:
		w, err = xz.NewWriter(&buf)
	default:
		t.Fatalf("no writer for %s", c)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(content); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// gen3000 is genCSV(3000, 97), which testdata/gen3000.csv.bz2 holds
// compressed with bzip2 -9.
func gen3000(t testing.TB) (plain string, bz2 []byte) {
	bz2, err := os.ReadFile("testdata/gen3000.csv.bz2")
	if err != nil {
		t.Fatal(err)
	}
	return genCSV(3000, 97), bz2
}

// compressedInputs writes content plain (in.csv) and in every compression
// (in.csv.gz, in.csv.zst, in.csv.bz2, in.csv.xz, and gzip bytes under a
// name with no extension, in.gzdata, for sniffing) and returns the paths.
func compressedInputs(t *testing.T) (plain string, comp map[string]string) {
	content, bz2 := gen3000(t)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain = write("in.csv", []byte(content))
	comp = map[string]string{
		"gzip":  write("in.csv.gz", compressed(t, CompressionGzip, []byte(content))),
		"zstd":  write("in.csv.zst", compressed(t, CompressionZstd, []byte(content))),
		"xz":    write("in.csv.xz", compressed(t, CompressionXz, []byte(content))),
		"bzip2": write("in.csv.bz2", bz2),
		"sniff": write("in.gzdata", compressed(t, CompressionGzip, []byte(content))),
	}
	return plain, comp
}

// TestCompressedCSVSameAsPlain reads a CSV with malformed records plain and
// in each compression, under each error policy, sequentially and with
// parallel parsing: the same records, Pos, batches, errors and dead
// letters (which name each input by its own path).
func TestCompressedCSVSameAsPlain(t *testing.T) {
	plain, comp := compressedInputs(t)
	opts := CSVOptions{Header: true, Columns: genFields}
	for _, mode := range csvModes {
		for _, k := range []int{1, 3} {
			want := runCSV(t, plain, opts, mode, k, 8<<10)
			if mode == core.DeadLetter && want.dead == 0 {
				t.Fatal("no dead letters: the input has no malformed records")
			}
			for c, path := range comp {
				got := runCSV(t, path, opts, mode, k, 8<<10)
				got.err = strings.ReplaceAll(got.err, path, plain)
				got.letters = strings.ReplaceAll(got.letters, filepath.Base(path), filepath.Base(plain))
				if d := sameRun(want, got); d != "" {
					t.Fatalf("%s, policy %v, parallelism %d: %s", c, mode, k, d)
				}
				if k > 1 && !got.parallel {
					t.Errorf("%s: not parsed in parallel", c)
				}
			}
		}
	}
}

// TestCompressionChoice: compression: none reads a .gz file's bytes as
// they are; an explicit compression reads a file whatever its name.
func TestCompressionChoice(t *testing.T) {
	content := "a,b\n1,2\n3,4\n"
	gz := compressed(t, CompressionGzip, []byte(content))
	p := writeFile(t, "in.csv.gz", string(gz))
	s, err := CSV(p, CSVOptions{Header: true, Compression: CompressionNone}, nil)
	if err == nil {
		// The gzip bytes as a CSV: no "a,b" header.
		if got := s.Schema().String(); strings.Contains(got, "(a string, b string)") {
			t.Errorf("compression none decompressed: schema %s", got)
		}
		s.Close()
	}
	q := writeFile(t, "in.dat", string(compressed(t, CompressionZstd, []byte(content))))
	s, err = CSV(q, CSVOptions{Header: true, Compression: CompressionZstd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	recs, err := records(t, s)
	if err != nil || strings.Join(recs, ";") != "2:|1|2;3:|3|4" {
		t.Errorf("zstd by option: %q, %v", recs, err)
	}
}

// TestCompressedJSONLSameAsPlain: JSON lines in gzip and zstd give the
// plain file's records and blocks.
func TestCompressedJSONLSameAsPlain(t *testing.T) {
	var sb strings.Builder
	for i := range 5000 {
		if i%500 == 7 {
			sb.WriteString("{\"id\": oops}\n")
			continue
		}
		sb.WriteString(`{"id":` + strings.Repeat("1", 1+i%5) + `,"name":"n` + strings.Repeat("x", i%7) + "\"}\n")
	}
	fields := []core.Field{{Name: "id", Type: core.Int64}, {Name: "name", Type: core.String}}
	dir := t.TempDir()
	plain := filepath.Join(dir, "in.jsonl")
	os.WriteFile(plain, []byte(sb.String()), 0o644)
	read := func(path string) (string, int) {
		errs, err := core.NewErrorPolicy(core.Skip, "")
		if err != nil {
			t.Fatal(err)
		}
		s, err := jsonlSource(path, fields, nil, nil, errs, 16<<10)
		if err != nil {
			t.Fatal(err)
		}
		blocks := s.(core.Splittable).Blocks()
		recs, err := records(t, s)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%s\nskipped %d", strings.Join(recs, "\n"), errs.Skipped.Load()), blocks
	}
	want, wantBlocks := read(plain)
	for _, c := range []Compression{CompressionGzip, CompressionZstd} {
		p := filepath.Join(dir, "in.jsonl."+map[Compression]string{CompressionGzip: "gz", CompressionZstd: "zst"}[c])
		os.WriteFile(p, compressed(t, c, []byte(sb.String())), 0o644)
		got, blocks := read(p)
		if got != want || blocks != wantBlocks {
			t.Errorf("%s: %d blocks, plain %d; same records: %v", c, blocks, wantBlocks, got == want)
		}
	}
}

// TestCompressedBadInput: a damaged compressed file is an error that names
// the file and the compression, under every error policy (the input past
// the damage is lost: no policy can count the records in it), never a
// silent end of input.
func TestCompressedBadInput(t *testing.T) {
	content, bz2 := gen3000(t)
	gz := compressed(t, CompressionGzip, []byte(content))
	zs := compressed(t, CompressionZstd, []byte(content))
	xzb := compressed(t, CompressionXz, []byte(content))
	corrupt := func(b []byte) []byte {
		c := bytes.Clone(b)
		for i := len(c) / 2; i < len(c)/2+64; i++ {
			c[i] ^= 0x5a
		}
		return c
	}
	cases := []struct {
		name, file string
		data       []byte
		want       string
	}{
		{"truncated gzip", "in.csv.gz", gz[:len(gz)/2], "in.csv.gz: gzip: truncated stream"},
		{"gzip header", "in.csv.gz", []byte(content), "in.csv.gz: gzip: invalid header"},
		{"corrupt gzip", "in.csv.gz", corrupt(gz), "in.csv.gz: gzip: "},
		{"truncated zstd", "in.csv.zst", zs[:len(zs)/2], "in.csv.zst: zstd: "},
		{"corrupt zstd", "in.csv.zst", corrupt(zs), "in.csv.zst: zstd: "},
		{"truncated bzip2", "in.csv.bz2", bz2[:len(bz2)/2], "in.csv.bz2: bzip2: truncated stream"},
		{"corrupt bzip2", "in.csv.bz2", corrupt(bz2), "in.csv.bz2: bzip2: "},
		{"truncated xz", "in.csv.xz", xzb[:len(xzb)/2], "in.csv.xz: xz: "},
		{"empty gzip", "in.csv.gz", nil, "in.csv.gz: gzip: truncated stream"},
	}
	for _, tc := range cases {
		p := writeFile(t, tc.file, string(tc.data))
		for _, mode := range csvModes {
			run := runCSV(t, p, CSVOptions{Header: true, Columns: genFields}, mode, 1, 8<<10)
			if !strings.Contains(run.err, tc.want) {
				t.Errorf("%s, policy %v: error %q, want it to contain %q", tc.name, mode, run.err, tc.want)
			}
			if len(run.recs) != 0 {
				t.Errorf("%s, policy %v: %d records before the error", tc.name, mode, len(run.recs))
			}
		}
	}
}

// TestStdinCompressed: a gzip stream on standard input is found by its
// magic number and read; a truncated one ends in an error, not a short
// input.
func TestStdinCompressed(t *testing.T) {
	content := "a,b\n1,2\n3,4\n"
	gz := compressed(t, CompressionGzip, []byte(content))
	for _, tc := range []struct {
		in      []byte
		recs    string
		wantErr string
	}{
		{gz, "2:|1|2;3:|3|4", ""},
		{gz[:len(gz)-6], "", "gzip: truncated stream"},
	} {
		s, err := Stdin("csv", StdinOptions{Reader: bytes.NewReader(tc.in), Header: true}, nil)
		if err != nil {
			if tc.wantErr != "" && strings.Contains(err.Error(), tc.wantErr) {
				continue
			}
			t.Fatal(err)
		}
		recs, err := records(t, s)
		s.Close()
		if tc.wantErr == "" && (err != nil || strings.Join(recs, ";") != tc.recs) {
			t.Errorf("records %q, %v", recs, err)
		}
		if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("error %v, want %q", err, tc.wantErr)
		}
	}
}

func TestParseCompression(t *testing.T) {
	for _, s := range []string{"", "auto", "none", "gzip", "zstd", "bzip2", "xz"} {
		if _, err := ParseCompression(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	if _, err := ParseCompression("zip"); err == nil || !strings.Contains(err.Error(), "expected one of auto, none, gzip, zstd, bzip2, xz") {
		t.Errorf("zip: %v", err)
	}
	if got := Sniff([]byte("BZh9 is a header,x\n")); got != CompressionNone {
		t.Errorf("a CSV starting BZh9 sniffed as %s", got)
	}
}
