package runtime

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"streamd/core"
	"streamd/ring"
)

// edgeRig is a stage's input of n edges over real rings, stepped by the
// test (it is both the edges' producer and the stage), on a clock of its
// own.
type edgeRig struct {
	t     *testing.T
	rings []*ring.SPSC[*core.Batch]
	e     *edges
	clock int64
}

func newEdgeRig(t *testing.T, n, capacity int, idleAfter time.Duration) *edgeRig {
	g := &edgeRig{t: t}
	for range n {
		rg, err := ring.New[*core.Batch](capacity)
		if err != nil {
			t.Fatal(err)
		}
		g.rings = append(g.rings, rg)
	}
	g.e = newEdges(g.rings, newDoorbell(), func() int64 { return g.clock }, idleAfter)
	return g
}

// push puts bs on edge i's ring, which must have room.
func (g *edgeRig) push(i int, bs ...*core.Batch) {
	g.t.Helper()
	for _, b := range bs {
		if !g.rings[i].TryPush(b) {
			g.t.Fatalf("edge %d's ring is full", i)
		}
	}
}

// drain steps the stage until it has nothing (or gave End), and says what
// it gave.
func (g *edgeRig) drain() []string {
	g.t.Helper()
	var got []string
	for {
		b, err := g.e.step()
		if err != nil {
			g.t.Fatalf("after %v: %v", got, err)
		}
		if b == nil {
			return got
		}
		got = append(got, show(b))
		end := b.Kind == core.End
		b.Release()
		if end {
			return got
		}
	}
}

// edgeData is a data batch tagged as edge i's k-th.
func edgeData(i, k int) *core.Batch {
	b := core.NewMarker(core.Data)
	b.MarkSeq = uint64(i*1000 + k)
	return b
}

func edgeWM(t int64) *core.Batch {
	m := core.NewMarker(core.Watermark)
	m.Watermark = t
	return m
}

func edgeBarrier(e uint64) *core.Batch {
	m := core.NewMarker(core.Barrier)
	m.Epoch = e
	return m
}

func show(b *core.Batch) string {
	switch b.Kind {
	case core.Data:
		return fmt.Sprintf("d%d.%d", b.MarkSeq/1000, b.MarkSeq%1000)
	case core.Watermark:
		return fmt.Sprintf("wm %d", b.Watermark)
	case core.Barrier:
		return fmt.Sprintf("barrier %d", b.Epoch)
	}
	return b.Kind.String()
}

func wantSteps(t *testing.T, step string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: got %v, want %v", step, got, want)
	}
}

// One edge idle: the stage's watermark waits for it until the clock says
// it is idle, then follows the other; back, it counts again only once its
// watermark has caught up (what it brings below is late, never a lower
// watermark).
func TestEdgesIdleInput(t *testing.T) {
	g := newEdgeRig(t, 2, 8, 10)
	g.push(0, edgeData(0, 1), edgeWM(10), edgeWM(20))
	wantSteps(t, "edge 1 silent", g.drain(), "d0.1")
	g.clock += 9
	wantSteps(t, "not idle yet", g.drain())
	g.clock++
	wantSteps(t, "edge 1 idle", g.drain(), "wm 20")
	g.push(1, edgeData(1, 1), edgeWM(5))
	wantSteps(t, "edge 1 back, behind", g.drain(), "d1.1")
	g.push(0, edgeWM(30))
	wantSteps(t, "edge 1 still behind", g.drain(), "wm 30")
	g.push(1, edgeWM(40))
	g.push(0, edgeWM(50))
	wantSteps(t, "edge 1 caught up", g.drain(), "wm 40")
	// Idleness does not excuse an edge from a barrier.
	g.push(0, edgeBarrier(1), edgeData(0, 2))
	g.clock += 100
	wantSteps(t, "edge 1 idle again, barrier held", g.drain(), "wm 50")
	g.push(1, edgeBarrier(1))
	wantSteps(t, "barrier complete", g.drain(), "barrier 1", "d0.2")
}

// One edge ended: it leaves the watermark's minimum, counts as aligned
// (its end may complete a barrier the other holds), and End goes on once
// every edge ended.
func TestEdgesEndedInput(t *testing.T) {
	g := newEdgeRig(t, 3, 8, 0)
	g.push(0, edgeWM(10))
	g.push(1, edgeWM(50))
	g.push(2, edgeWM(70))
	wantSteps(t, "watermarks", g.drain(), "wm 10")
	g.push(0, core.NewMarker(core.End))
	wantSteps(t, "edge 0 ended", g.drain(), "wm 50")
	g.push(1, edgeBarrier(1), edgeData(1, 1))
	wantSteps(t, "edge 1 held", g.drain())
	g.push(2, core.NewMarker(core.End))
	wantSteps(t, "edge 2's end completes the barrier", g.drain(), "barrier 1", "d1.1")
	g.push(1, edgeBarrier(2))
	wantSteps(t, "only edge 1 left", g.drain(), "barrier 2")
	g.push(1, edgeData(1, 2), core.NewMarker(core.End))
	wantSteps(t, "every edge ended", g.drain(), "d1.2", "end")
	if _, err := g.e.step(); !errors.Is(err, ring.ErrClosed) {
		t.Fatalf("a step after End: %v, want ring.ErrClosed", err)
	}
}

// Barriers arriving in every order, two and three edges, two epochs (the
// second in the reverse order of the first): no edge is read past its
// barrier before the barrier is complete; it goes on once, after what
// every edge delivered before it and before anything after it.
func TestEdgesBarrierOrders(t *testing.T) {
	for _, n := range []int{2, 3} {
		for _, p := range permutations(n) {
			t.Run(fmt.Sprint(p), func(t *testing.T) {
				g := newEdgeRig(t, n, 8, 0)
				for e := range 2 {
					var before []string
					for i := range n {
						g.push(i, edgeData(i, 2*e))
						before = append(before, fmt.Sprintf("d%d.%d", i, 2*e))
					}
					got := g.drain()
					slices.Sort(got)
					wantSteps(t, "before the barrier", got, before...)
					order := slices.Clone(p)
					if e == 1 {
						slices.Reverse(order)
					}
					var after []string
					for k, i := range order {
						g.push(i, edgeBarrier(uint64(e+1)), edgeData(i, 2*e+1))
						after = append(after, fmt.Sprintf("d%d.%d", i, 2*e+1))
						got := g.drain()
						if k < n-1 {
							wantSteps(t, fmt.Sprintf("epoch %d, edge %d held", e+1, i), got)
							continue
						}
						if len(got) == 0 || got[0] != fmt.Sprintf("barrier %d", e+1) {
							t.Fatalf("epoch %d complete: got %v, want the barrier first", e+1, got)
						}
						rest := got[1:]
						slices.Sort(rest)
						slices.Sort(after)
						wantSteps(t, "after the barrier", rest, after...)
					}
				}
			})
		}
	}
}

// permutations are the orders of 0 … n−1.
func permutations(n int) [][]int {
	if n == 1 {
		return [][]int{{0}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for at := 0; at <= len(p); at++ {
			out = append(out, slices.Insert(slices.Clone(p), at, n-1))
		}
	}
	return out
}

// A held edge is bounded by its ring: the stage does not read it, its
// producer finds the ring full, and the other edge goes on through any
// number of batches while the stage holds nothing of the held one.
func TestEdgesHeldInputBounded(t *testing.T) {
	g := newEdgeRig(t, 2, 4, 0)
	g.push(0, edgeBarrier(1))
	wantSteps(t, "edge 0 held", g.drain())
	held := 0
	for g.rings[0].TryPush(edgeData(0, held)) {
		held++
	}
	if held != g.rings[0].Cap() {
		t.Fatalf("pushed %d behind the barrier into a ring of %d", held, g.rings[0].Cap())
	}
	for k := range 100 {
		g.push(1, edgeData(1, k))
		wantSteps(t, "edge 1 goes on", g.drain(), fmt.Sprintf("d1.%d", k))
		if g.rings[0].Len() != held || len(g.e.out) != 0 {
			t.Fatalf("after %d batches of edge 1: edge 0's ring holds %d of %d, the stage %d", k, g.rings[0].Len(), held, len(g.e.out))
		}
	}
	g.push(1, edgeBarrier(1))
	want := []string{"barrier 1"}
	for k := range held {
		want = append(want, fmt.Sprintf("d0.%d", k))
	}
	wantSteps(t, "released", g.drain(), want...)
}

// The stage's pop with its producers on goroutines of their own and rings
// of 4 (held edges block their producers): every batch once, each edge's
// in its order, and each barrier after every batch the edges sent before
// it and before any they sent after it.
func TestEdgesPopAligned(t *testing.T) {
	const n, per, every = 2, 400, 50
	g := newEdgeRig(t, n, 4, 0)
	bell := g.e.bell
	for i := range n {
		go func() {
			send := func(b *core.Batch) {
				if _, err := g.rings[i].Push(b); err != nil {
					b.Release()
					return
				}
				bell.ring()
			}
			for k := range per {
				if k > 0 && k%every == 0 {
					send(edgeBarrier(uint64(k / every)))
				}
				send(edgeData(i, k))
			}
			send(core.NewMarker(core.End))
		}()
	}
	next := make([]int, n) // by edge: the batch it delivers next
	epoch := 0
	for {
		b, err := g.e.pop(nil)
		if err != nil {
			t.Fatal(err)
		}
		switch b.Kind {
		case core.Data:
			i, k := int(b.MarkSeq/1000), int(b.MarkSeq%1000)
			if k != next[i] || k/every != epoch {
				t.Fatalf("d%d.%d after barrier %d, edge %d's next %d", i, k, epoch, i, next[i])
			}
			next[i]++
		case core.Barrier:
			if int(b.Epoch) != epoch+1 {
				t.Fatalf("barrier %d after %d", b.Epoch, epoch)
			}
			for i, k := range next {
				if k != int(b.Epoch)*every {
					t.Fatalf("barrier %d with edge %d at %d", b.Epoch, i, k)
				}
			}
			epoch++
		case core.End:
			for i, k := range next {
				if k != per {
					t.Fatalf("End with edge %d at %d of %d", i, k, per)
				}
			}
			b.Release()
			return
		}
		b.Release()
	}
}
