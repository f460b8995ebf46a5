package source

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"streamd/core"
)

// TestExpand: directories, globs and ** patterns name regular files in
// name order, leave hidden ones and subdirectories out, and a pattern or
// directory that names nothing is ErrNoFiles.
func TestExpand(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"b.csv", "a.csv", ".hidden.csv", "c.txt", "sub/d.csv", "sub/deeper/e.csv", ".git/f.csv", "sub/.h/g.csv"} {
		p := filepath.Join(dir, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("x\n"), 0o644)
	}
	os.MkdirAll(filepath.Join(dir, "dir.csv"), 0o755) // a directory that matches *.csv
	os.MkdirAll(filepath.Join(dir, "empty"), 0o755)
	rel := func(ps []string) string {
		var out []string
		for _, p := range ps {
			r, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(r))
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct{ pat, want string }{
		{"", "a.csv b.csv c.txt"},
		{"*.csv", "a.csv b.csv"},
		{".*.csv", ".hidden.csv"},
		{"**/*.csv", "a.csv b.csv sub/d.csv sub/deeper/e.csv"},
		{"sub/**/*.csv", "sub/d.csv sub/deeper/e.csv"},
		{"*/*.csv", "sub/d.csv"},
		{"[ab].csv", "a.csv b.csv"},
		{"a.csv", "a.csv"},
	} {
		got, err := Expand(filepath.Join(dir, tc.pat))
		if err != nil || rel(got) != tc.want {
			t.Errorf("%q: %q, %v; want %q", tc.pat, rel(got), err, tc.want)
		}
	}
	for _, pat := range []string{"*.json", "empty", "nothere/*.csv"} {
		if _, err := Expand(filepath.Join(dir, pat)); !errors.Is(err, ErrNoFiles) {
			t.Errorf("%q: %v, want ErrNoFiles", pat, err)
		}
	}
	if _, err := Expand(filepath.Join(dir, "[.csv")); !errors.Is(err, filepath.ErrBadPattern) {
		t.Errorf("bad pattern: %v", err)
	}
	if !Matches(filepath.Join(dir, "**/*.csv"), filepath.Join(dir, "x/y/out.csv")) || Matches(filepath.Join(dir, "*.csv"), filepath.Join(dir, "x/out.csv")) {
		t.Error("Matches")
	}
}

// TestConcatParquet: Parquet files through a glob are one input whose
// blocks are the files' row groups in order, with record counts
// (core.BlockStarts) across the files, and whose Pos carry the file.
func TestConcatParquet(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i, n := range []int{700, 0, 1300} {
		rows := make([]typed, n)
		for j := range rows {
			rows[j] = typedRow(i*1000 + j)
		}
		p := writeTyped(t, rows, parquet.MaxRowsPerRowGroup(500))
		q := filepath.Join(dir, string(rune('a'+i))+".parquet")
		if err := os.Rename(p, q); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, q)
	}
	s, err := Concat(paths, func(p string) (core.Source, error) { return Parquet(p, []string{"i64"}, nil) })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sp, ok := s.(core.Splittable)
	bs, counted := s.(core.BlockStarts)
	if !ok || !counted || sp.Blocks() != 2+3 {
		t.Fatalf("%T: splittable %v, counted %v", s, ok, counted)
	}
	if got := []int64{bs.BlockStart(0), bs.BlockStart(1), bs.BlockStart(2), bs.BlockStart(3), bs.BlockStart(4), bs.BlockStart(5)}; !slices.Equal(got, []int64{0, 500, 700, 1200, 1700, 2000}) {
		t.Errorf("block starts %v", got)
	}
	var seq []int64
	var fromBlocks []int64
	for {
		b, err := s.Next(ctx)
		if err != nil {
			break
		}
		seq = append(seq, b.Pos[:b.Len]...)
		b.Release()
	}
	for blk := range sp.Blocks() {
		sp.ReadBlock(ctx, blk, nil, func(b *core.Batch) error {
			fromBlocks = append(fromBlocks, b.Pos[:b.Len]...)
			b.Release()
			return nil
		})
	}
	if len(seq) != 2000 || !slices.Equal(seq, fromBlocks) || !slices.IsSorted(seq) {
		t.Fatalf("%d positions by Next, %d by blocks, sorted %v", len(seq), len(fromBlocks), slices.IsSorted(seq))
	}
	if seq[700] != 2<<core.PosFileShift|1 || core.PosLine(seq[699]) != 700 {
		t.Errorf("positions %x %x: want file 2 row 1, and row 700", seq[700], seq[699])
	}
}
