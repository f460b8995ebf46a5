package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"streamd/core"
)

// MaxUnionBlocks bounds the blocks of a union: a record's position keeps
// its block in the bits above core.PosFileShift (core.Interleaved).
const MaxUnionBlocks = 1<<(63-core.PosFileShift) - 1

// Union returns the union of inputs, read as a block interleave fixed by
// the inputs alone (core.Interleaved; docs/ARCHITECTURE.md,
// "Determinism"): block 0 of input 0, block 0 of input 1, …, then block 1
// of each input that has one, and so on, skipping exhausted inputs. So the
// order of the records, their batches and their watermarks depend on the
// inputs' bytes only, never on how many workers read them.
//
// names name the inputs in errors and in dead letters. Every input must be
// core.Splittable with a bounded number of blocks (a file, a glob of
// files, a generator with a count and no rate), and have the first input's
// schema: the same field names and types in the same order (fields are
// matched by place, and their names must agree). errs is the job's
// policy: Next reads every block through it (rebased, core.ErrorPolicy.
// Rebased), and NameInputs makes its dead letters name their input.
//
// Union owns the inputs from the call on: on an error it closes them.
func Union(inputs []core.Source, names []string, errs *core.ErrorPolicy) (core.Source, error) {
	u := &union{srcs: inputs, names: names, errs: errs}
	if err := u.check(); err != nil {
		u.Close()
		return nil, err
	}
	u.layout()
	if errs != nil {
		errs.NameInputs(u.inputOf)
	}
	if u.counted() {
		return &countedUnion{u}, nil
	}
	return u, nil
}

// UnionInputError is an error of one input of a union: Input is its
// index.
type UnionInputError struct {
	Input int
	Err   error
}

func (e *UnionInputError) Error() string { return e.Err.Error() }
func (e *UnionInputError) Unwrap() error { return e.Err }

// union is the block interleave of several inputs.
type union struct {
	srcs  []core.Source
	names []string
	errs  *core.ErrorPolicy
	split []core.Splittable
	n     []int // blocks per input
	// rounds: block r of every input with more than r blocks is round r;
	// start(r) is the union's block where round r starts. byCount lists
	// the inputs' block counts, sorted, for start.
	byCount []int
	blocks  int
	last    []int // last block of each input in the union; -1: none

	// Next's state: the next block, the batches of the one being read,
	// and the error its read ended with (returned after its batches).
	next    int
	queue   []*core.Batch
	readErr error
}

// check refuses inputs that cannot be interleaved: not read by blocks,
// unbounded, or of another schema.
func (u *union) check() error {
	if len(u.srcs) == 0 {
		return errors.New("a union needs at least one input")
	}
	s0 := u.srcs[0].Schema()
	for i, s := range u.srcs {
		sp, ok := s.(core.Splittable)
		n := 0
		if ok {
			n = sp.Blocks()
		}
		switch {
		case !ok || (n == 0 && !hasNoBlocks(s)):
			return &UnionInputError{i, fmt.Errorf("input %s cannot be read by blocks fixed by its bytes (its batches follow the clock or arrival), so it cannot join a union", u.names[i])}
		case n < 0:
			return &UnionInputError{i, fmt.Errorf("input %s is unbounded: a union interleaves bounded inputs (give the generator a count)", u.names[i])}
		}
		u.split = append(u.split, sp)
		u.n = append(u.n, n)
		if i == 0 {
			continue
		}
		si := s.Schema()
		if len(si.Fields) != len(s0.Fields) {
			return &UnionInputError{i, fmt.Errorf("input %s has %d fields and input %s has %d: the inputs of a union must have the same fields, by name and type, in the same order", u.names[i], len(si.Fields), u.names[0], len(s0.Fields))}
		}
		for k, f := range si.Fields {
			g := s0.Fields[k]
			if f.Name != g.Name || f.Type != g.Type || f.Nullable != g.Nullable {
				return &UnionInputError{i, fmt.Errorf("field %d: input %s has %s, input %s has %s: the inputs of a union must have the same fields, by name and type, in the same order", k+1, u.names[i], describeField(f), u.names[0], describeField(g))}
			}
		}
	}
	total := 0
	for _, n := range u.n {
		total += n
	}
	if total > MaxUnionBlocks {
		return fmt.Errorf("the union has %d blocks; at most %d fit in a record's position", total, MaxUnionBlocks)
	}
	return nil
}

func describeField(f core.Field) string {
	s := fmt.Sprintf("%q %s", f.Name, f.Type)
	if f.Nullable {
		s += " (nullable)"
	}
	return s
}

// hasNoBlocks says whether a Splittable with no blocks has none because
// it holds no records (an empty file, a glob of empty files), not because
// it cannot be read by blocks (a rate-limited generator).
func hasNoBlocks(s core.Source) bool {
	switch s.(type) {
	case *splitConcat, *countedConcat:
		return true
	}
	return emptyFile(s)
}

// layout computes the rounds and each input's last block.
func (u *union) layout() {
	u.byCount = append([]int(nil), u.n...)
	sort.Ints(u.byCount)
	for _, n := range u.n {
		u.blocks += n
	}
	u.last = make([]int, len(u.n))
	for i, n := range u.n {
		u.last[i] = -1
		if n > 0 {
			u.last[i] = u.start(n-1) + u.rank(n-1, i)
		}
	}
}

// start is the union's block where round r starts: Σ min(n_i, r).
func (u *union) start(r int) int {
	s := 0
	for _, n := range u.byCount {
		s += min(n, r)
	}
	return s
}

// rank is input i's place among the inputs that have a block in round r.
func (u *union) rank(r, i int) int {
	k := 0
	for j := range i {
		if u.n[j] > r {
			k++
		}
	}
	return k
}

// locate is the input of union block b and b's number in that input.
func (u *union) locate(b int) (in, lb int) {
	// The last round starting at or before b.
	r := sort.Search(u.byCount[len(u.byCount)-1], func(r int) bool { return u.start(r+1) > b })
	k := b - u.start(r)
	for i, n := range u.n {
		if n > r {
			if k == 0 {
				return i, r
			}
			k--
		}
	}
	panic(fmt.Sprintf("union: block %d not found", b)) // b < Blocks() is checked by callers
}

func (u *union) inputOf(pos int64) string {
	b := int(pos >> core.PosFileShift)
	if b < 0 || b >= u.blocks {
		return ""
	}
	i, _ := u.locate(b)
	return u.names[i]
}

func (u *union) Schema() *core.Schema { return u.srcs[0].Schema() }

// Blocks is the sum of the inputs' blocks (core.Splittable).
func (u *union) Blocks() int { return u.blocks }

// Inputs, BlockInput and LastBlock: core.Interleaved.
func (u *union) Inputs() int { return len(u.srcs) }

func (u *union) BlockInput(b int) int {
	i, _ := u.locate(b)
	return i
}

func (u *union) LastBlock(i int) int { return u.last[i] }

// ReadBlock reads union block b: the block of its input, each record's
// position rebased to b<<core.PosFileShift | its line (Tag), bad records
// through errs (or the union's policy) rebased the same way.
func (u *union) ReadBlock(ctx context.Context, b int, errs *core.ErrorPolicy, emit func(*core.Batch) error) error {
	if b < 0 || b >= u.blocks {
		return fmt.Errorf("union of %d inputs: no block %d (%d blocks)", len(u.srcs), b, u.blocks)
	}
	i, lb := u.locate(b)
	if errs == nil {
		errs = u.errs
	}
	base := int64(b) << core.PosFileShift
	var rebased *core.ErrorPolicy
	if errs != nil {
		rebased = errs.Rebased(base)
	}
	return u.split[i].ReadBlock(ctx, lb, rebased, func(bt *core.Batch) error {
		Tag(bt, base)
		return emit(bt)
	})
}

// Tag gives every record of bt the position base | its line (PosLine):
// the union's tagging of a batch of one of its inputs. It allocates
// nothing.
func Tag(bt *core.Batch, base int64) {
	pos := bt.Pos[:bt.Len]
	for k, p := range pos {
		pos[k] = base | core.PosLine(p)
	}
}

// Next returns the union's batches in block order: those of ReadBlock(0),
// then ReadBlock(1), …, so that the batches are the blocks' (core.
// Splittable). It reads one block ahead into memory.
func (u *union) Next(ctx context.Context) (*core.Batch, error) {
	for len(u.queue) == 0 {
		if u.readErr != nil {
			err := u.readErr
			u.readErr = nil
			return nil, err
		}
		if u.next >= u.blocks {
			return nil, io.EOF
		}
		b := u.next
		u.next++
		err := u.ReadBlock(ctx, b, nil, func(bt *core.Batch) error {
			u.queue = append(u.queue, bt)
			return nil
		})
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("union block %d: %w", b, io.ErrUnexpectedEOF)
			}
			u.readErr = err
			u.next = u.blocks
		}
	}
	bt := u.queue[0]
	u.queue[0] = nil
	u.queue = u.queue[1:]
	return bt, nil
}

// Close releases the batches read ahead and closes every input.
func (u *union) Close() error {
	for _, b := range u.queue {
		b.Release()
	}
	u.queue = nil
	var first error
	for _, s := range u.srcs {
		if err := s.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// counted says whether every input knows its record count and where its
// blocks start (Parquet files, generators).
func (u *union) counted() bool {
	for _, s := range u.srcs {
		_, bs := s.(core.BlockStarts)
		_, sz := s.(core.Sized)
		if !bs || !sz {
			return false
		}
	}
	return true
}

// countedUnion is a union whose inputs all know where their blocks start.
type countedUnion struct{ *union }

// Size is the number of records of all the inputs (core.Sized).
func (u *countedUnion) Size() int64 {
	var n int64
	for _, s := range u.srcs {
		n += s.(core.Sized).Size()
	}
	return n
}

// BlockStart is the number of records in the union's blocks before b
// (core.BlockStarts).
func (u *countedUnion) BlockStart(b int) int64 {
	if b >= u.blocks {
		return u.Size()
	}
	i, r := u.locate(b)
	var n int64
	for j, s := range u.srcs {
		// Input j's blocks before round r, and its block r when it
		// comes before i's in the round.
		upto := min(u.n[j], r)
		if j < i && u.n[j] > r {
			upto = r + 1
		}
		n += u.blockStart(s, j, upto)
	}
	return n
}

// blockStart is the records before block k of input j (its size at its
// end).
func (u *countedUnion) blockStart(s core.Source, j, k int) int64 {
	if k >= u.n[j] {
		return s.(core.Sized).Size()
	}
	return s.(core.BlockStarts).BlockStart(k)
}
