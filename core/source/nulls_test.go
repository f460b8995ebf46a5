package source

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"streamd/core"
)

// CSV empty fields: null in a nullable column (string too, quoted or
// not), the default in a defaulted one, "" in a plain string column, and a
// malformed record in a plain int64 column — the same with the sequential
// reader and with parallel parsing of a file of many blocks.
func TestCSVEmptyFields(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("i,s,q,p,bad\n")
	const n = 40_000
	for x := range n {
		i, s, q, p, bad := fmt.Sprint(x), fmt.Sprintf("s%d", x%9), fmt.Sprint(x%5), "p", "1"
		switch x % 6 {
		case 1:
			i = ""
		case 2:
			s = `""`
		case 3:
			q = ""
		case 4:
			p, s = "", ""
		}
		if x%1000 == 999 {
			bad = ""
		}
		fmt.Fprintf(&sb, "%s,%s,%s,%s,%s\n", i, s, q, p, bad)
	}
	path := filepath.Join(t.TempDir(), "gaps.csv")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	seven := core.IntValue(7)
	cols := []core.Field{
		{Name: "i", Type: core.Int64, Nullable: true},
		{Name: "s", Type: core.String, Nullable: true},
		{Name: "q", Type: core.Int64, Default: &seven},
		{Name: "p", Type: core.String},
		{Name: "bad", Type: core.Int64},
	}
	for _, par := range []int{1, 4} {
		errs, _ := core.NewErrorPolicy(core.Skip, "")
		s, err := CSV(path, CSVOptions{Header: true, Columns: cols, Parallelism: par}, errs)
		if err != nil {
			t.Fatal(err)
		}
		rows, pos := drain(t, s)
		s.Close()
		if got := s.Schema().String(); got != "(i int64 null, s string null, q int64, p string, bad int64)" {
			t.Fatalf("schema %s", got)
		}
		if len(rows) != n-n/1000 || errs.Skipped.Load() != n/1000 {
			t.Fatalf("parallelism %d: %d rows, %d skipped", par, len(rows), errs.Skipped.Load())
		}
		for k, r := range rows {
			x := int(pos[k]) - 2 // line 2 is record 0
			wantI := x%6 != 1
			wantS := x%6 != 2 && x%6 != 4
			ok := r[0].IsNull() != wantI && (!wantI || r[0].Int() == int64(x)) &&
				r[1].IsNull() != wantS && (!wantS || r[1].Str() == fmt.Sprintf("s%d", x%9)) &&
				!r[2].IsNull() && (x%6 == 3 && r[2].Int() == 7 || x%6 != 3 && r[2].Int() == int64(x%5)) &&
				!r[3].IsNull() && (x%6 == 4) == (r[3].Str() == "")
			if !ok {
				t.Fatalf("parallelism %d, record %d: %v", par, x, r)
			}
		}
	}
}
