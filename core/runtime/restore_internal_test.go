package runtime

import (
	"context"
	"errors"
	"testing"

	"streamd/core"
	"streamd/snapshot"
)

// blocksOf is a Splittable whose block b starts at record starts[b].
type blocksOf struct {
	core.Source
	starts []int64
}

func (s blocksOf) Blocks() int            { return len(s.starts) }
func (s blocksOf) BlockStart(b int) int64 { return s.starts[b] }
func (s blocksOf) ReadBlock(context.Context, int, *core.ErrorPolicy, func(*core.Batch) error) error {
	return nil
}

// A checkpoint of the block readers resumes at its block, and inside it
// at its records (absent in checkpoints at a block's start); one of the
// single source stage resumes where its position is: at a block's start
// (the first of several empty blocks there), or inside the block that
// holds it.
func TestRestoredBlock(t *testing.T) {
	src := blocksOf{starts: []int64{0, 100, 250, 250, 400}}
	for _, c := range []struct {
		sources map[string]int64
		want    int
		skip    int64
		fits    bool
	}{
		{map[string]int64{"source": 250, "block": 3}, 3, 0, true},
		{map[string]int64{"source": 270, "block": 3, "block_records": 20}, 3, 20, true},
		{map[string]int64{"block": 1, "block_records": -1}, 0, 0, false},
		{map[string]int64{"source": 0}, 0, 0, true},
		{map[string]int64{"source": 100}, 1, 0, true},
		{map[string]int64{"source": 250}, 2, 0, true},
		{map[string]int64{"source": 400}, 4, 0, true},
		{map[string]int64{"source": 101}, 1, 1, true},
		{map[string]int64{"source": 99}, 0, 99, true},
		{map[string]int64{"source": 300}, 3, 50, true},
		{map[string]int64{"source": 500}, 4, 100, true}, // past the end: the worker fails
	} {
		b, skip, err := restoredBlock(&snapshot.Metadata{Sources: c.sources}, src)
		if c.fits && (err != nil || b != c.want || skip != c.skip) || !c.fits && !errors.Is(err, ErrCheckpointMismatch) {
			t.Errorf("%v: block %d, %d records in, %v; want %d, %d, fits %v", c.sources, b, skip, err, c.want, c.skip, c.fits)
		}
	}
}
