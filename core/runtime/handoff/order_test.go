package handoff

import (
	"testing"

	"streamd/kvstate"
)

// Every interleaving of three losers' handoffs with the gainer's marker:
// the gainer adopts nothing before its marker, adopts every handoff once,
// in arrival order, and is settled exactly when it has adopted the last.
func TestEveryOrder(t *testing.T) {
	moves := []kvstate.Move{{Group: 1, From: 0, To: 1}, {Group: 2, From: 2, To: 1}, {Group: 3, From: 3, To: 1}, {Group: 4, From: 3, To: 1}}
	// Events: 0, 2, 3 = that loser's handoff arrives; -1 = the gainer's
	// marker. Every permutation of the four.
	events := []int{-1, 0, 2, 3}
	var perms [][]int
	var permute func(k int)
	permute = func(k int) {
		if k == len(events) {
			perms = append(perms, append([]int(nil), events...))
			return
		}
		for i := k; i < len(events); i++ {
			events[k], events[i] = events[i], events[k]
			permute(k + 1)
			events[k], events[i] = events[i], events[k]
		}
	}
	permute(0)
	if len(perms) != 24 {
		t.Fatalf("%d permutations", len(perms))
	}
	for _, balance := range []bool{false, true} {
		for _, perm := range perms {
			from := 4
			p := NewPlan(moves, from, 4, balance)
			m := At(p, 1)
			var arrived, adopted []int
			marked := false
			for _, e := range perm {
				if e < 0 {
					_, early := m.Mark(0)
					marked = true
					for _, h := range early {
						adopted = append(adopted, h.From)
					}
					if balance && m.CanHold() {
						m.Hold(1)
					}
				} else {
					arrived = append(arrived, e)
					hs, err := m.Arrive(Handoff{From: e, Groups: p.Losses(e)[0].Groups})
					if err != nil {
						t.Fatalf("%v: %v", perm, err)
					}
					if !marked && len(hs) > 0 {
						t.Fatalf("%v: adopted %v before the marker", perm, hs)
					}
					for _, h := range hs {
						adopted = append(adopted, h.From)
					}
				}
				if want := marked && len(arrived) == 3; m.Settled() != want {
					t.Fatalf("%v (balance %v): settled %v after %v arrived, marked %v", perm, balance, m.Settled(), arrived, marked)
				}
				if m.Held(3) != (balance && marked && !m.Settled()) {
					t.Fatalf("%v: group 3 held %v", perm, m.Held(3))
				}
			}
			if len(adopted) != 3 || adopted[0] != arrived[0] || adopted[1] != arrived[1] || adopted[2] != arrived[2] {
				t.Fatalf("%v: adopted %v, arrived %v", perm, adopted, arrived)
			}
			if _, err := m.Arrive(Handoff{From: arrived[0]}); err == nil {
				t.Fatalf("%v: a second handoff from %d accepted", perm, arrived[0])
			}
		}
	}
}
