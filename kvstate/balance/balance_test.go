package balance

import (
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"streamd/kvstate"
)

// genCase draws a table, per-group loads (Zipf-like: a few heavy groups)
// and bytes.
func genCase(t *rapid.T) (owners []int, channels int, load []uint64, bytes []int64, target float64) {
	groups := 1 << rapid.IntRange(1, 8).Draw(t, "shift")
	channels = rapid.IntRange(1, 9).Draw(t, "channels")
	owners = rapid.SliceOfN(rapid.IntRange(0, channels-1), groups, groups).Draw(t, "owners")
	load = make([]uint64, groups)
	bytes = make([]int64, groups)
	for g := range load {
		if rapid.IntRange(0, 9).Draw(t, "heavy") == 0 {
			load[g] = rapid.Uint64Range(0, 100_000).Draw(t, "load")
		} else {
			load[g] = rapid.Uint64Range(0, 1000).Draw(t, "load")
		}
		bytes[g] = rapid.Int64Range(0, 1<<20).Draw(t, "bytes")
	}
	target = rapid.Float64Range(1, 2).Draw(t, "target")
	return
}

// Every plan is a valid change of the table (each group once, from its
// owner to another channel), its figures are those of the table it makes,
// it never makes the skew worse, and it stops only at the target or where
// no group of the most loaded channel fits the least loaded one.
func TestRebalanceProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		owners, channels, load, bytes, target := genCase(t)
		in := slices.Clone(owners)
		p := Rebalance(owners, channels, load, bytes, target)
		if !slices.Equal(in, owners) {
			t.Fatal("Rebalance changed its input")
		}
		after := slices.Clone(owners)
		seen := map[int]bool{}
		var moved int64
		for _, m := range p.Moves {
			if seen[m.Group] || m.From != owners[m.Group] || m.To == m.From || m.To < 0 || m.To >= channels {
				t.Fatalf("bad move %+v (owner %d, seen %v)", m, owners[m.Group], seen[m.Group])
			}
			seen[m.Group] = true
			after[m.Group] = m.To
			moved += bytes[m.Group]
		}
		loads := ChannelLoads(after, channels, load)
		if !slices.Equal(loads, p.Loads) || p.After != Skew(loads) || p.Before != Skew(ChannelLoads(owners, channels, load)) || p.Bytes != moved {
			t.Fatalf("plan figures %v %v %v %d, table %v %v %d", p.Loads, p.Before, p.After, p.Bytes, loads, Skew(loads), moved)
		}
		if p.After > p.Before+1e-12 {
			t.Fatalf("skew went up: %v → %v", p.Before, p.After)
		}
		full := plan(owners, channels, load, bytes, target)
		if p.Small {
			if len(p.Moves) != 0 || p.After != p.Before || len(full.Moves) == 0 || full.Before-full.After >= MinGain {
				t.Fatalf("dropped plan %+v, full plan %+v", p, full)
			}
			return
		}
		if len(p.Moves) > 0 && p.Before-p.After < MinGain {
			t.Fatalf("plan gains %v < MinGain", p.Before-p.After)
		}
		if p.Target < target-1e-12 && channels > 1 && p.Before != 1 {
			t.Fatalf("target %v lowered to %v", target, p.Target)
		}
		var total uint64
		for _, l := range load {
			total += l
		}
		if total == 0 || channels < 2 {
			if len(p.Moves) > 0 {
				t.Fatal("moves without load or with one channel")
			}
			return
		}
		bound := uint64(math.Floor(p.Target * float64(total) / float64(channels)))
		h, l := slices.Index(loads, slices.Max(loads)), slices.Index(loads, slices.Min(loads))
		if loads[h] <= bound {
			return // target met
		}
		for g, o := range after {
			if o == h && load[g] > 0 && loads[l]+load[g] <= bound {
				t.Fatalf("stopped at skew %v over target %v, yet group %d (load %d) of channel %d fits channel %d (load %d, bound %d)",
					p.After, p.Target, g, load[g], h, l, loads[l], bound)
			}
		}
	})
}

// A balanced table is left alone.
func TestRebalanceBalancedMovesNothing(t *testing.T) {
	owners := []int{0, 1, 0, 1}
	p := Rebalance(owners, 2, []uint64{10, 10, 10, 11}, []int64{1, 1, 1, 1}, 1.1)
	if len(p.Moves) != 0 || p.Before != p.After {
		t.Fatalf("%+v", p)
	}
}

// The single cheapest group that sheds the excess beats several small,
// individually cheaper-per-load ones; and among equal covers the fewest
// bytes win.
func TestRebalanceChoosesFewBytes(t *testing.T) {
	// Channel 0: groups 0..3; channel 1: group 4. Loads 0: 300 total
	// (100, 50, 50, 100), 1: 100. Mean 200, bound 220, excess 80, room 120.
	owners := []int{0, 0, 0, 0, 1}
	load := []uint64{100, 50, 50, 100, 100}
	// Groups 1 and 2 are cheap per load (25 bytes each: 2 loads/byte) but
	// together cost 50; group 3 sheds the excess alone for 40 bytes.
	bytes := []int64{1000, 25, 25, 40, 0}
	p := Rebalance(owners, 2, load, bytes, 1.1)
	if len(p.Moves) != 1 || p.Moves[0] != (kvstate.Move{Group: 3, From: 0, To: 1}) || p.Bytes != 40 || p.After != 1 {
		t.Fatalf("%+v", p)
	}
	// Without group 3 the two cheap groups are the cover (50 bytes), not
	// group 0 (1000).
	// Loads 0: 120 (60, 30, 30), 1: 0; mean 60, bound 66, excess 54.
	owners, load, bytes = []int{0, 0, 0, 1}, []uint64{60, 30, 30, 0}, []int64{1000, 25, 25, 0}
	p = Rebalance(owners, 2, load, bytes, 1.1)
	if len(p.Moves) != 2 || p.Bytes != 50 || p.After != 1 {
		t.Fatalf("%+v", p)
	}
}

// A group heavier than the target share raises the target to its share
// (the granularity bound): the channel holding it keeps it and sheds the
// rest.
func TestRebalanceHeavyGroupRaisesTarget(t *testing.T) {
	owners := []int{0, 0, 0, 1, 1}
	load := []uint64{600, 100, 100, 100, 100} // total 1000, mean 500
	p := Rebalance(owners, 2, load, make([]int64, 5), 1.1)
	if p.Target != 1.2 || p.After != 1.2 || len(p.Moves) != 2 {
		t.Fatalf("%+v", p)
	}
	for _, m := range p.Moves {
		if m.Group == 0 {
			t.Fatal("the heavy group moved")
		}
	}
}

// A hot group that keeps its channel the most loaded whatever moves: the
// few light groups beside it would lower the skew by less than MinGain,
// so nothing moves (two channels would pause for nothing).
func TestRebalanceSmallGainMovesNothing(t *testing.T) {
	// Channel 0: the hot group (1,000) and two light ones (2 each); 1 and
	// 2: 100 each. Mean 401.3, bound 1,000: shedding the light groups
	// takes the skew from 2.5017 to 2.4917.
	owners := []int{0, 0, 0, 1, 2}
	load := []uint64{1000, 2, 2, 100, 100}
	if full := plan(owners, 3, load, make([]int64, 5), 1.1); len(full.Moves) != 2 {
		t.Fatalf("without the rule: %+v", full)
	}
	p := Rebalance(owners, 3, load, make([]int64, 5), 1.1)
	if !p.Small || len(p.Moves) != 0 || p.After != p.Before || !slices.Equal(p.Loads, []uint64{1004, 100, 100}) {
		t.Fatalf("%+v", p)
	}
	// A gain of MinGain or more is carried out: 20 each beside the hot
	// group take the skew from 2.516 to 2.419.
	load = []uint64{1000, 20, 20, 100, 100}
	if p := Rebalance(owners, 3, load, make([]int64, 5), 1.1); p.Small || len(p.Moves) != 2 {
		t.Fatalf("%+v", p)
	}
}

// Steps keep the moves' order, and every step is within the bound or a
// single move.
func TestStepsProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		owners, channels, load, bytes, target := genCase(t)
		p := Rebalance(owners, channels, load, bytes, target)
		cost := Cost{GroupNs: rapid.Float64Range(1, 100).Draw(t, "groupNs"), BytesPerNs: rapid.Float64Range(0.1, 10).Draw(t, "bytesPerNs")}
		bound := rapid.Float64Range(1, 1e6).Draw(t, "bound")
		steps := Steps(p.Moves, bytes, cost, bound)
		var all []kvstate.Move
		for i, s := range steps {
			if len(s) == 0 {
				t.Fatalf("step %d is empty", i)
			}
			var b int64
			for _, m := range s {
				b += bytes[m.Group]
			}
			if len(s) > 1 && cost.Ns(len(s), b) > bound {
				t.Fatalf("step %d: %d moves cost %v ns > %v", i, len(s), cost.Ns(len(s), b), bound)
			}
			if i+1 < len(steps) {
				n := steps[i+1][0]
				if cost.Ns(len(s)+1, b+bytes[n.Group]) <= bound {
					t.Fatalf("step %d could have taken the next move", i)
				}
			}
			all = append(all, s...)
		}
		if !slices.Equal(all, p.Moves) {
			t.Fatal("steps do not keep the moves")
		}
	})
}
