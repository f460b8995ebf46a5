package runtime

import (
	"testing"

	"streamd/kvstate"
)

// losses lists every moved group once, under its old owner and new owner,
// and every (old, new) pair once: the handoffs a channel sends and the
// count a gaining channel expects.
func TestLosses(t *testing.T) {
	for _, c := range []struct{ from, to int }{{1, 2}, {2, 1}, {3, 8}, {8, 3}, {5, 6}, {16, 11}} {
		a, b := kvstate.NewTable(4096, c.from), kvstate.NewTable(4096, c.to)
		moves := kvstate.Moves(a, b)
		ls := losses(moves, max(c.from, c.to))
		seen := map[int]bool{}
		for from, byTo := range ls {
			last := -1
			for _, l := range byTo {
				if l.to <= last || l.to == from || len(l.groups) == 0 {
					t.Fatalf("%d→%d: channel %d's handoffs out of order, to itself or empty: %+v", c.from, c.to, from, byTo)
				}
				last = l.to
				for _, g := range l.groups {
					if a.Owner(g) != from || b.Owner(g) != l.to || seen[g] {
						t.Fatalf("%d→%d: group %d listed from %d to %d (owners %d, %d; seen %v)", c.from, c.to, g, from, l.to, a.Owner(g), b.Owner(g), seen[g])
					}
					seen[g] = true
				}
			}
		}
		if len(seen) != len(moves) || len(moves) == 0 {
			t.Fatalf("%d→%d: %d groups in handoffs, %d moves", c.from, c.to, len(seen), len(moves))
		}
	}
}
