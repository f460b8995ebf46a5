package kvstate

import (
	"testing"

	"pgregory.net/rapid"
)

func TestKeyGroupRange(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		shift := rapid.IntRange(0, 16).Draw(t, "shift")
		groups := 1 << shift
		h := rapid.Uint64().Draw(t, "hash")
		g := KeyGroup(h, groups)
		if g < 0 || g >= groups {
			t.Fatalf("KeyGroup(%x, %d) = %d", h, groups, g)
		}
	})
	if g := KeyGroup(^uint64(0), 4096); g != 4095 {
		t.Fatalf("top hash in group %d, want 4095", g)
	}
	if g := KeyGroup(1, 4096); g != 0 {
		t.Fatalf("low hash in group %d, want 0", g)
	}
}

func TestCheckGroups(t *testing.T) {
	for _, n := range []int{1, 2, 4096, 65536} {
		if err := CheckGroups(n); err != nil {
			t.Errorf("CheckGroups(%d) = %v", n, err)
		}
	}
	for _, n := range []int{0, -4, 3, 4095, 1 << 17} {
		if CheckGroups(n) == nil {
			t.Errorf("CheckGroups(%d) accepted", n)
		}
	}
}

// Growing from N to N+1 channels moves only key groups into the new channel,
// about groups/(N+1) of them; shrinking moves only the last channel's.
func TestTableMovesAboutOneNth(t *testing.T) {
	const groups = DefaultGroups
	for n := 1; n < 64; n++ {
		a, b := NewTable(groups, n), NewTable(groups, n+1)
		ms := Moves(a, b)
		for _, m := range ms {
			if m.To != n {
				t.Fatalf("%d→%d: group %d moved %d→%d, not into the new channel", n, n+1, m.Group, m.From, m.To)
			}
		}
		want := float64(groups) / float64(n+1)
		if got := float64(len(ms)); got < 0.7*want || got > 1.3*want {
			t.Errorf("%d→%d channels moved %d key groups, want about %.0f", n, n+1, len(ms), want)
		}
		back := Moves(b, a)
		if len(back) != len(ms) {
			t.Errorf("%d→%d moved %d groups, back moved %d", n, n+1, len(ms), len(back))
		}
		for _, m := range back {
			if m.From != n {
				t.Fatalf("%d→%d: group %d moved from channel %d, which stays", n+1, n, m.Group, m.From)
			}
		}
	}
}

// Balance: max/mean key groups per channel stays low for 1..64 channels.
func TestTableBalance(t *testing.T) {
	const groups = DefaultGroups
	worst := 0.0
	for n := 1; n <= 64; n++ {
		tab := NewTable(groups, n)
		counts := make([]int, n)
		for g := 0; g < groups; g++ {
			counts[tab.Owner(g)]++
		}
		max := 0
		total := 0
		for c, k := range counts {
			total += k
			if k == 0 {
				t.Fatalf("%d channels: channel %d owns no key group", n, c)
			}
			if k > max {
				max = k
			}
		}
		if total != groups {
			t.Fatalf("%d channels: %d groups assigned, want %d", n, total, groups)
		}
		ratio := float64(max) / (float64(groups) / float64(n))
		if ratio > worst {
			worst = ratio
		}
		if ratio > 1.35 {
			t.Errorf("%d channels: max/mean key groups = %.3f, want ≤ 1.35", n, ratio)
		}
	}
	t.Logf("worst max/mean over 1..64 channels: %.3f", worst)
}

func TestOwnedPartitions(t *testing.T) {
	tab := NewTable(256, 5)
	seen := make([]bool, 256)
	for c := 0; c < 5; c++ {
		for _, g := range tab.Owned(c) {
			if seen[g] {
				t.Fatalf("group %d owned twice", g)
			}
			seen[g] = true
			if tab.Owner(g) != c {
				t.Fatalf("Owned(%d) lists %d, owner %d", c, g, tab.Owner(g))
			}
		}
	}
	for g, s := range seen {
		if !s {
			t.Fatalf("group %d unowned", g)
		}
	}
}

// Resize of a jump-hashed table is the jump-hashed table of the new
// channel count, so a job that never rebalanced moves what it always did.
func TestResizeOfJumpTable(t *testing.T) {
	for m := 1; m <= 12; m++ {
		for n := 1; n <= 12; n++ {
			if got := NewTable(256, m).Resize(n); !got.Equal(NewTable(256, n)) {
				t.Fatalf("NewTable(256, %d).Resize(%d) differs from NewTable(256, %d)", m, n, n)
			}
		}
	}
}

// A rebalanced (explicit) table resized: growing moves groups only into
// the channels added; shrinking moves only the removed channels' groups,
// into the channels left; every owner is a channel of the new count; and
// NewAssigned(Owners()) gives the table back.
func TestResizeExplicitTable(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		groups := 1 << rapid.IntRange(0, 9).Draw(t, "shift")
		m := rapid.IntRange(1, 16).Draw(t, "from")
		n := rapid.IntRange(1, 16).Draw(t, "to")
		owners := rapid.SliceOfN(rapid.IntRange(0, m-1), groups, groups).Draw(t, "owners")
		a, err := NewAssigned(owners, m)
		if err != nil {
			t.Fatal(err)
		}
		if b, err := NewAssigned(a.Owners(), m); err != nil || !b.Equal(a) {
			t.Fatalf("NewAssigned(Owners()) = %v, %v", b, err)
		}
		b := a.Resize(n)
		if b.Channels() != n {
			t.Fatalf("%d channels", b.Channels())
		}
		for _, mv := range Moves(a, b) {
			switch {
			case mv.To >= n:
				t.Fatalf("group %d moved to %d of %d channels", mv.Group, mv.To, n)
			case n > m && mv.To < m:
				t.Fatalf("growing %d→%d: group %d moved %d→%d, not into a new channel", m, n, mv.Group, mv.From, mv.To)
			case n <= m && mv.From < n:
				t.Fatalf("shrinking %d→%d: group %d of a kept channel moved %d→%d", m, n, mv.Group, mv.From, mv.To)
			}
		}
	})
}

func TestReassignAndNewAssignedErrors(t *testing.T) {
	a := NewTable(16, 3)
	g := 5
	from := a.Owner(g)
	to := (from + 1) % 3
	b, err := a.Reassign([]Move{{Group: g, From: from, To: to}})
	if err != nil {
		t.Fatal(err)
	}
	if ms := Moves(a, b); len(ms) != 1 || ms[0] != (Move{Group: g, From: from, To: to}) {
		t.Fatalf("moves %v", ms)
	}
	if a.Owner(g) != from {
		t.Fatal("Reassign changed the table it was called on")
	}
	if _, err := a.Reassign([]Move{{Group: g, From: to, To: from}}); err == nil {
		t.Fatal("a move from a channel that does not own the group was accepted")
	}
	if _, err := a.Reassign([]Move{{Group: g, From: from, To: 3}}); err == nil {
		t.Fatal("a move to channel 3 of 3 was accepted")
	}
	if _, err := NewAssigned([]int{0, 1, 2}, 3); err == nil {
		t.Fatal("3 key groups accepted")
	}
	if _, err := NewAssigned([]int{0, 1, 2, 3}, 3); err == nil {
		t.Fatal("owner 3 of 3 channels accepted")
	}
}
