package flightsdata

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// flights finds flights-3m.parquet: in STREAMD_DATA, or in shared/data
// above the working directory (CI lays ../shared beside the repository).
func flights(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("STREAMD_DATA"); d != "" {
		return filepath.Join(d, "flights-3m.parquet")
	}
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		p := filepath.Join(d, "shared", "data", "flights-3m.parquet")
		if _, err := os.Stat(p); err == nil {
			return p
		}
		if d == filepath.Dir(d) {
			t.Fatalf("shared/data/flights-3m.parquet not found above %s (scripts/fetch-data.sh)", dir)
		}
	}
}

func open(t *testing.T, path string) *parquet.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	return pf
}

func readRows(t *testing.T, pf *parquet.File, n int) []parquet.Row {
	t.Helper()
	r := parquet.NewReader(pf)
	defer r.Close()
	rows := make([]parquet.Row, n)
	k, err := r.ReadRows(rows)
	if k != n {
		t.Fatalf("read %d rows of %d: %v", k, n, err)
	}
	return rows
}

// A slice holds the source's first rows with the same schema, in as many
// row groups; a slice longer than the file is the whole file.
func TestSlice(t *testing.T) {
	src := flights(t)
	dst := filepath.Join(t.TempDir(), "slice.parquet")
	const rows = 5000
	n, err := Slice(src, dst, rows)
	if err != nil || n != rows {
		t.Fatalf("Slice: %d rows, %v", n, err)
	}
	full, slice := open(t, src), open(t, dst)
	if slice.NumRows() != rows || len(slice.RowGroups()) != len(full.RowGroups()) {
		t.Fatalf("%d rows in %d row groups, want %d in %d", slice.NumRows(), len(slice.RowGroups()), rows, len(full.RowGroups()))
	}
	if got, want := slice.Schema().String(), full.Schema().String(); got != want {
		t.Fatalf("schema\n%s\nwant\n%s", got, want)
	}
	want, got := readRows(t, full, rows), readRows(t, slice, rows)
	for i := range want {
		if !want[i].Equal(got[i]) {
			t.Fatalf("row %d: %v, want %v", i, got[i], want[i])
		}
	}

	small := filepath.Join(t.TempDir(), "small.parquet")
	if _, err := Slice(dst, small, 10*rows); err != nil {
		t.Fatal(err)
	}
	if n := open(t, small).NumRows(); n != rows {
		t.Fatalf("a slice past the end holds %d rows, want %d", n, rows)
	}
	if _, err := Slice(src, small, 0); err == nil {
		t.Fatal("a slice of 0 rows was cut")
	}
}
