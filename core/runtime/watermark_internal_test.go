package runtime

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"streamd/core"
)

// TestWMGenSteps steps the watermark generator through a script of
// points and block ends (bound 10 ns): a watermark goes out only when it
// rises, a point with no event time gives none, and a block's points
// count the blocks before it.
func TestWMGenSteps(t *testing.T) {
	g := newWMGen(10, core.NoTime, nil)
	var out []string
	point := func(b int, m int64) {
		if wm, ok := g.at(b, m); ok {
			out = append(out, fmt.Sprintf("b%d@%d:%d", b, m, wm))
		} else {
			out = append(out, fmt.Sprintf("b%d@%d:-", b, m))
		}
	}
	point(0, core.NoTime) // no event time yet
	point(0, 100)         // 100 − 10 − 1
	point(0, 100)         // the same: not forwarded again
	point(0, 105)
	g.endBlock(0, 105)
	point(1, 50)  // block 1's own largest is lower: the blocks before hold it
	point(1, 120) // max(105, 120) − 11
	g.endBlock(1, 120)
	g.endBlock(2, core.NoTime) // a block with no event time
	point(3, 90)
	want := "b0@-9223372036854775808:- b0@100:89 b0@100:- b0@105:94 b1@50:- b1@120:109 b3@90:-"
	if got := strings.Join(out, " "); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// TestWMGenOneBlockAgrees: the single source stage runs the generator as
// one block whose points carry the largest event time so far; a channel
// of the exchange runs it over the blocks, each point a block's own
// largest so far (a worker's candidate), each block closed at its end.
// Both forward the same watermarks at the same points, however the batches
// fall into blocks.
func TestWMGenOneBlockAgrees(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 1))
		bound := rng.Int64N(20)
		one, blocks := newWMGen(bound, core.NoTime, nil), newWMGen(bound, core.NoTime, nil)
		runMax, blockMax, b := int64(core.NoTime), int64(core.NoTime), 0
		for i := range 200 {
			if rng.IntN(8) == 0 { // a block ends
				blocks.endBlock(b, blockMax)
				b, blockMax = b+1, core.NoTime
			}
			m := rng.Int64N(1000) + int64(i) // out of order, rising on the whole
			runMax, blockMax = max(runMax, m), max(blockMax, m)
			w1, ok1 := one.at(0, runMax)
			w2, ok2 := blocks.at(b, blockMax)
			if w1 != w2 || ok1 != ok2 {
				t.Fatalf("seed %d point %d (block %d): one block %d %v, blocks %d %v", seed, i, b, w1, ok1, w2, ok2)
			}
		}
	}
}
