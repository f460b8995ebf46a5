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
