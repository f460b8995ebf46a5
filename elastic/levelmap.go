package elastic

import "math"

// LevelMap maps levels to channel counts [TPDS14 §4, P6]. Levels are
// numbered from 0. With Fast set, N(L) = round(2^((L+1)/2)): 1, 2, 3, 4, 6,
// 8, 11, 16, 23, 32, 45, 64, … — each level adds about 41 % more channels,
// so the controller crosses a wide range in few periods while small regions
// still move one channel at a time. Without Fast, N(L) = L + 1.
type LevelMap struct {
	Fast bool
}

// maxMapLevel bounds the level search; N(60) is about 2^30.5.
const maxMapLevel = 60

// Channels is N(level), the channel count at a level (level >= 0).
func (m LevelMap) Channels(level int) int {
	if level < 0 {
		return 0
	}
	if !m.Fast {
		return level + 1
	}
	return int(math.Round(math.Pow(2, float64(level+1)/2)))
}

// MaxLevel is L*, the largest level with N(L) <= limit, or -1 when limit < 1.
func (m LevelMap) MaxLevel(limit int) int {
	if limit < 1 {
		return -1
	}
	if !m.Fast {
		return limit - 1
	}
	l := 0
	for l < maxMapLevel && m.Channels(l+1) <= limit {
		l++
	}
	return l
}

// Level is the smallest level with N(L) >= channels: the level of a channel
// count on the map, and the lowest level allowed by a minimum.
func (m LevelMap) Level(channels int) int {
	if channels <= 1 {
		return 0
	}
	if !m.Fast {
		return channels - 1
	}
	l := 0
	for l < maxMapLevel && m.Channels(l) < channels {
		l++
	}
	return l
}

// Floor is the largest level with N(L) <= channels (0 when channels < 1):
// where the level controller places a channel count that is not on the map.
func (m LevelMap) Floor(channels int) int {
	return max(m.MaxLevel(channels), 0)
}
