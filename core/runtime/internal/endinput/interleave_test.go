package endinput

import (
	"testing"

	"pgregory.net/rapid"
)

// TestInterleavings steps a Tail through random interleavings — channels
// reaching the end in any order, checkpoints due at any step, the rings
// emptying and filling, the channel count changing, the tail filling up —
// and checks the protocol's promises at every step:
//
//   - each channel delivers (or places) barriers 0, 1, 2, … in order,
//     each once, and closes only after the last one placed;
//   - a barrier is placed only when a checkpoint is due, never once any
//     channel has closed, and never beyond room;
//   - the first close comes only when the tail is full, or every channel
//     of the newest routing is at the end and the rings are empty; after
//     a channel's close, its every step closes;
//   - a channel with nothing to deliver waits only when no checkpoint is
//     due and the tail is open;
//   - once the rings stay empty and no checkpoint comes due, every
//     channel of the newest routing, stepped in turn, closes within as
//     many rounds as there are barriers, plus one.
func TestInterleavings(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		room := rapid.IntRange(0, 4).Draw(t, "room")
		n := rapid.IntRange(1, 4).Draw(t, "channels")
		tl := New(room)
		next := map[int]int{}    // by channel: the barrier it delivers next
		atEnd := map[int]bool{}  // by channel: it has stepped
		closed := map[int]bool{} // by channel: it has closed
		placed, anyClosed := 0, false
		step := func(c int, f Facts) {
			d := tl.Step(c, f)
			atEnd[c] = true
			switch d.Action {
			case Deliver, Place:
				if closed[c] {
					t.Fatalf("c%d: %v after its close", c, d)
				}
				if d.Barrier != next[c] {
					t.Fatalf("c%d: %v, want barrier %d", c, d, next[c])
				}
				next[c]++
				if d.Action == Place {
					if !f.Due || anyClosed || d.Barrier != placed || placed >= room {
						t.Fatalf("c%d: %v with due=%v, a close before: %v, %d placed, room %d", c, d, f.Due, anyClosed, placed, room)
					}
					placed++
				} else if d.Barrier >= placed {
					t.Fatalf("c%d: %v, only %d placed", c, d, placed)
				}
			case Close:
				if next[c] != placed {
					t.Fatalf("c%d: closed having delivered %d of %d barriers", c, next[c], placed)
				}
				if !anyClosed && placed < room {
					for k := range f.Channels {
						if !atEnd[k] {
							t.Fatalf("c%d: closed before c%d of %d channels is at the end", c, k, f.Channels)
						}
					}
					if f.RingsHold {
						t.Fatalf("c%d: closed while the rings hold batches", c)
					}
				}
				closed[c], anyClosed = true, true
			case Wait:
				if closed[c] || next[c] < placed || f.Due || anyClosed || placed >= room {
					t.Fatalf("c%d: waits with closed=%v, %d of %d delivered, due=%v, a close before: %v, room %d", c, closed[c], next[c], placed, f.Due, anyClosed, room)
				}
			}
			if tl.Placed() != placed || tl.Closed() != (anyClosed || placed >= room) {
				t.Fatalf("state %s, want %d placed, closed=%v", tl, placed, anyClosed || placed >= room)
			}
		}
		for range rapid.IntRange(0, 40).Draw(t, "steps") {
			if rapid.IntRange(0, 9).Draw(t, "change") == 0 {
				// A live change of the channel count: the channels it
				// removes never reach the end (they retire at it).
				n = rapid.IntRange(1, 4).Draw(t, "channels")
			}
			c := rapid.IntRange(0, n-1).Draw(t, "c")
			step(c, Facts{Channels: n, RingsHold: rapid.Bool().Draw(t, "hold"), Due: rapid.Bool().Draw(t, "due")})
		}
		// The drain is over: every channel closes, stepped in turn.
		for round := 0; len(closed) < n || !allClosed(closed, n); round++ {
			if round > placed+1 {
				t.Fatalf("not every channel closed after %d rounds with the rings empty (%s)", round, tl)
			}
			for c := range n {
				step(c, Facts{Channels: n})
			}
		}
	})
}

// allClosed says whether channels 0..n-1 have all closed.
func allClosed(closed map[int]bool, n int) bool {
	for c := range n {
		if !closed[c] {
			return false
		}
	}
	return true
}
