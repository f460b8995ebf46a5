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

// A checkpoint of the block readers resumes at its block; one of the single
// source stage fits where its position is a block's start, and is refused
// (ErrCheckpointMismatch) inside a block.
func TestRestoredBlock(t *testing.T) {
	src := blocksOf{starts: []int64{0, 100, 250, 250, 400}}
	for _, c := range []struct {
		sources map[string]int64
		want    int
		fits    bool
	}{
		{map[string]int64{"source": 250, "block": 3}, 3, true},
		{map[string]int64{"source": 0}, 0, true},
		{map[string]int64{"source": 100}, 1, true},
		{map[string]int64{"source": 250}, 2, true},
		{map[string]int64{"source": 400}, 4, true},
		{map[string]int64{"source": 101}, 0, false},
		{map[string]int64{"source": 500}, 0, false},
	} {
		b, err := restoredBlock(&snapshot.Metadata{Sources: c.sources}, src)
		if c.fits && (err != nil || b != c.want) || !c.fits && !errors.Is(err, ErrCheckpointMismatch) {
			t.Errorf("%v: block %d, %v; want %d, fits %v", c.sources, b, err, c.want, c.fits)
		}
	}
}
