package handoff

import (
	"testing"

	"streamd/kvstate"
)

// A plan lists every moved group once, under its old owner and new owner,
// and every (old, new) pair once: the handoffs a channel sends and the
// losers a gaining channel expects one handoff from.
func TestPlanOfResize(t *testing.T) {
	for _, c := range []struct{ from, to int }{{1, 2}, {2, 1}, {3, 8}, {8, 3}, {5, 6}, {16, 11}} {
		a, b := kvstate.NewTable(4096, c.from), kvstate.NewTable(4096, c.to)
		moves := kvstate.Moves(a, b)
		p := NewPlan(moves, c.from, c.to, false)
		seen := map[int]bool{}
		expect := map[int]int{}
		for from := range max(c.from, c.to) {
			last := -1
			for _, l := range p.Losses(from) {
				if l.To <= last || l.To == from || len(l.Groups) == 0 {
					t.Fatalf("%d→%d: channel %d's handoffs out of order, to itself or empty: %+v", c.from, c.to, from, p.Losses(from))
				}
				last = l.To
				expect[l.To]++
				for _, g := range l.Groups {
					if a.Owner(g) != from || b.Owner(g) != l.To || seen[g] {
						t.Fatalf("%d→%d: group %d listed from %d to %d (owners %d, %d; seen %v)", c.from, c.to, g, from, l.To, a.Owner(g), b.Owner(g), seen[g])
					}
					seen[g] = true
				}
			}
		}
		if len(seen) != len(moves) || len(moves) == 0 {
			t.Fatalf("%d→%d: %d groups in handoffs, %d moves", c.from, c.to, len(seen), len(moves))
		}
		gained := 0
		for to := range max(c.from, c.to) {
			if len(p.Losers(to)) != expect[to] {
				t.Fatalf("%d→%d: channel %d expects %d handoffs, %d are sent", c.from, c.to, to, len(p.Losers(to)), expect[to])
			}
			for _, g := range p.Gains(to) {
				if b.Owner(g) != to {
					t.Fatalf("%d→%d: channel %d gains group %d, owned by %d", c.from, c.to, to, g, b.Owner(g))
				}
			}
			gained += len(p.Gains(to))
			if p.Retires(to) && len(p.Gains(to)) > 0 {
				t.Fatalf("%d→%d: channel %d retires and gains", c.from, c.to, to)
			}
		}
		if gained != len(moves) {
			t.Fatalf("%d→%d: %d groups gained, %d moves", c.from, c.to, gained, len(moves))
		}
	}
}
