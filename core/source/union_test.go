package source

import (
	"context"
	"errors"
	"io"
	"testing"

	"streamd/core"
)

// generators returns seeded generators of the given record counts.
func generators(t testing.TB, counts ...int64) ([]core.Source, []string) {
	var srcs []core.Source
	var names []string
	for i, n := range counts {
		g, err := Generator(GeneratorOptions{Seed: uint64(i + 1), Count: n, Keys: 10})
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, g)
		names = append(names, string(rune('a'+i)))
	}
	return srcs, names
}

// A union of inputs of 3, 1 and 2 blocks interleaves them a0 b0 c0 a1 c1
// a2: each block's input, the inputs' last blocks and the records before
// each block follow; Next returns exactly ReadBlock's batches in block
// order, with positions that rise through the whole union and keep each
// record's row in its input.
func TestUnionInterleave(t *testing.T) {
	const blk = GeneratorBlockRecords
	srcs, names := generators(t, 2*blk+5, blk, blk+7)
	s, err := Union(srcs, names, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	u := s.(core.Interleaved)
	wantIn := []int{0, 1, 2, 0, 2, 0}
	wantLocal := []int{0, 0, 0, 1, 1, 2}
	if u.Blocks() != 6 || u.Inputs() != 3 {
		t.Fatalf("%d blocks, %d inputs", u.Blocks(), u.Inputs())
	}
	for b, in := range wantIn {
		if got := u.BlockInput(b); got != in {
			t.Errorf("block %d: input %d, want %d", b, got, in)
		}
	}
	for i, last := range []int{5, 1, 4} {
		if got := u.LastBlock(i); got != last {
			t.Errorf("input %d: last block %d, want %d", i, got, last)
		}
	}
	starts := []int64{0, blk, 2 * blk, 3 * blk, 4 * blk, 4*blk + 7, 4*blk + 7 + 5}
	bs := s.(core.BlockStarts)
	for b, want := range starts {
		if got := bs.BlockStart(b); got != want {
			t.Errorf("BlockStart(%d) = %d, want %d", b, got, want)
		}
	}
	// ReadBlock's batches, block by block, against Next's.
	type rec struct {
		pos int64
		v   string
	}
	var blocks [][]rec
	for b := range u.Blocks() {
		var rs []rec
		err := u.ReadBlock(context.Background(), b, nil, func(bt *core.Batch) error {
			for i := range bt.Len {
				rs = append(rs, rec{bt.Pos[i], string(core.AppendText(nil, bt.Schema.Fields[2].Type, bt.Row(i)[2]))})
			}
			bt.Release()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if b < len(wantLocal) && rs[0].pos != int64(b)<<core.PosFileShift|int64(wantLocal[b]*blk+1) {
			t.Errorf("block %d starts at position %#x", b, rs[0].pos)
		}
		blocks = append(blocks, rs)
	}
	prev := int64(0)
	k := 0
	for b := 0; ; {
		bt, err := s.Next(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range bt.Len {
			for k == len(blocks[b]) {
				b, k = b+1, 0
			}
			want := blocks[b][k]
			got := rec{bt.Pos[i], string(core.AppendText(nil, bt.Schema.Fields[2].Type, bt.Row(i)[2]))}
			if got != want || got.pos <= prev {
				t.Fatalf("block %d record %d: %v, want %v (previous position %#x)", b, k, got, want, prev)
			}
			prev = got.pos
			k++
		}
		bt.Release()
	}
}

// Tag, the union's per-batch step, allocates nothing: 0 allocs/op.
func BenchmarkUnionTag(b *testing.B) {
	s := core.MustSchema(core.Field{Name: "v", Type: core.Int64})
	bt := core.NewBatch(s)
	bt.Extend(core.BatchSize, 1)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		Tag(bt, int64(i&1023)<<core.PosFileShift)
	}
}
