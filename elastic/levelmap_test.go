package elastic

import (
	"slices"
	"testing"
)

func TestFastLevelMap(t *testing.T) {
	m := LevelMap{Fast: true}
	want := []int{1, 2, 3, 4, 6, 8, 11, 16, 23, 32, 45, 64, 91, 128}
	var got []int
	for l := range want {
		got = append(got, m.Channels(l))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("fast N(L), L=0..%d = %v, want %v", len(want)-1, got, want)
	}
	for l := 1; l <= maxMapLevel; l++ {
		if m.Channels(l) <= m.Channels(l-1) {
			t.Fatalf("N(%d) = %d <= N(%d) = %d: the map must grow strictly", l, m.Channels(l), l-1, m.Channels(l-1))
		}
	}
}

func TestPlainLevelMap(t *testing.T) {
	m := LevelMap{}
	for l := range 40 {
		if got := m.Channels(l); got != l+1 {
			t.Fatalf("plain N(%d) = %d, want %d", l, got, l+1)
		}
	}
}

func TestMaxLevel(t *testing.T) {
	fast, plain := LevelMap{Fast: true}, LevelMap{}
	for _, c := range []struct {
		m     LevelMap
		limit int
		want  int
	}{
		{fast, 0, -1}, {fast, 1, 0}, {fast, 2, 1}, {fast, 3, 2}, {fast, 5, 3},
		{fast, 6, 4}, {fast, 10, 5}, {fast, 16, 7}, {fast, 22, 7}, {fast, 32, 9},
		{fast, 44, 9}, {fast, 45, 10}, {fast, 1 << 40, maxMapLevel},
		{plain, 0, -1}, {plain, 1, 0}, {plain, 8, 7},
	} {
		if got := c.m.MaxLevel(c.limit); got != c.want {
			t.Errorf("fast=%v MaxLevel(%d) = %d, want %d", c.m.Fast, c.limit, got, c.want)
		}
	}
}

func TestLevelAndFloor(t *testing.T) {
	m := LevelMap{Fast: true}
	for _, c := range []struct{ ch, level, floor int }{
		{0, 0, 0}, {1, 0, 0}, {2, 1, 1}, {4, 3, 3}, {5, 4, 3}, {6, 4, 4}, {7, 5, 4}, {32, 9, 9}, {33, 10, 9},
	} {
		if got := m.Level(c.ch); got != c.level {
			t.Errorf("Level(%d) = %d, want %d", c.ch, got, c.level)
		}
		if got := m.Floor(c.ch); got != c.floor {
			t.Errorf("Floor(%d) = %d, want %d", c.ch, got, c.floor)
		}
	}
	if got := (LevelMap{}).Level(5); got != 4 {
		t.Errorf("plain Level(5) = %d, want 4", got)
	}
}

// TestLevelRange: L* follows from min(max_channels, cores), the lowest
// level from min_channels.
func TestLevelRange(t *testing.T) {
	for _, c := range []struct {
		fast               bool
		min, max, cores    int
		lo, hi, startChans int
	}{
		{true, 1, 0, 32, 0, 9, 1},
		{true, 1, 20, 32, 0, 7, 1},
		{true, 1, 64, 12, 0, 6, 1},
		{true, 3, 0, 8, 2, 5, 3},
		{true, 5, 0, 8, 4, 5, 6},
		{false, 2, 6, 0, 1, 5, 2},
	} {
		cfg := DefaultConfig()
		cfg.FastScaling, cfg.MinChannels, cfg.MaxChannels, cfg.Cores = c.fast, c.min, c.max, c.cores
		p, err := New(PolicyLevels, cfg)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		l := p.(*Levels)
		if lo, hi := l.Range(); lo != c.lo || hi != c.hi || l.Channels() != c.startChans {
			t.Errorf("%+v: range %d..%d start %d channels, want %d..%d start %d", c, lo, hi, l.Channels(), c.lo, c.hi, c.startChans)
		}
	}
}
