package source

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/parquet-go/parquet-go"

	"streamd/core"
)

// parquetBatchText renders a batch's records with their positions, one string a
// batch, to compare two readers batch by batch.
func parquetBatchText(b *core.Batch) string {
	var buf []byte
	for i := range b.Len {
		buf = fmt.Appendf(buf, "%d:", b.Pos[i])
		for c, v := range b.Row(i) {
			buf = core.AppendText(buf, b.Schema.Fields[c].Type, v)
			buf = append(buf, ',')
		}
		buf = append(buf, ';')
	}
	return string(buf)
}

// readBlocks reads every block of s with m goroutines, block b by worker
// b mod m, and returns the batches in block order.
func readBlocks(t *testing.T, s core.Splittable, m int) []string {
	t.Helper()
	per := make([][]string, s.Blocks())
	var wg sync.WaitGroup
	errs := make([]error, m)
	for w := range m {
		wg.Go(func() {
			for b := w; b < s.Blocks(); b += m {
				errs[w] = s.ReadBlock(context.Background(), b, nil, func(bt *core.Batch) error {
					per[b] = append(per[b], parquetBatchText(bt))
					bt.Release()
					return nil
				})
				if errs[w] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return slices.Concat(per...)
}

// Blocks are row groups; reading them with 1, 2, 3 or 8 concurrent workers
// and joining in block order gives exactly Next's batches, nulls read the
// same way (as core.Null: the optional column holds some).
func TestParquetBlocksMatchNext(t *testing.T) {
	rows := make([]typed, 7000)
	for i := range rows {
		rows[i] = typedRow(i)
		if i%97 == 5 {
			rows[i].Opt = nil
		}
	}
	p := writeTyped(t, rows, parquet.PageBufferSize(700), parquet.MaxRowsPerRowGroup(1500))
	seqErrs, _ := core.NewErrorPolicy(core.Skip, "")
	s, err := Parquet(p, nil, seqErrs)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var want []string
	for {
		b, err := s.Next(context.Background())
		if err != nil {
			break
		}
		want = append(want, parquetBatchText(b))
		b.Release()
	}
	if !s.Schema().Fields[s.Schema().Index("opt")].Nullable {
		t.Fatal("opt is not Nullable")
	}
	if s.Blocks() != 5 || len(want) != 14 { // 4 row groups of 1500 rows (3 batches) and one of 1000 (2)
		t.Fatalf("%d blocks, %d batches", s.Blocks(), len(want))
	}
	for _, m := range []int{1, 2, 3, 8} {
		errs, _ := core.NewErrorPolicy(core.Skip, "")
		ps, err := Parquet(p, nil, errs)
		if err != nil {
			t.Fatal(err)
		}
		got := readBlocks(t, ps, m)
		// Again on the same source: the calls now take cursors that read
		// other row groups before (their dictionaries' values, interners).
		again := readBlocks(t, ps, m)
		ps.Close()
		if !slices.Equal(got, want) {
			t.Fatalf("%d workers: %d batches, want %d; first difference at %d", m, len(got), len(want), firstDiff(got, want))
		}
		if !slices.Equal(again, want) {
			t.Fatalf("%d workers, read again: %d batches, want %d; first difference at %d", m, len(again), len(want), firstDiff(again, want))
		}
		if errs.Skipped.Load() != 0 || seqErrs.Skipped.Load() != 0 {
			t.Fatalf("%d workers: %d skipped, Next skipped %d", m, errs.Skipped.Load(), seqErrs.Skipped.Load())
		}
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
