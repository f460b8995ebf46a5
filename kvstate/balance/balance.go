package balance

import (
	"cmp"
	"math"
	"slices"

	"streamd/kvstate"
)

// DefaultTarget is the skew (max channel load / mean) a plan aims at
// unless told otherwise.
const DefaultTarget = 1.1

// MinGain is the least drop in skew a plan must bring to be carried out:
// moves that lower max/mean by less (a hot group's channel shedding a few
// light groups while the hot group alone keeps the maximum where it is)
// would pause two channels for a gain below the noise of one period's
// counts, so Rebalance plans none (Plan.Small).
const MinGain = 0.01

// Plan is a rebalance: the moves that bring the skew from Before to After.
type Plan struct {
	// Moves lists the key groups that change owner, in the order chosen
	// (each group at most once; From is its owner in the table given).
	Moves []kvstate.Move
	// Before and After are the skew under the table given and after the
	// moves (1 when the load is zero); Target is the bound aimed at: the
	// target given, raised to the heaviest group's load / mean when a
	// single group is heavier than target · mean.
	Before, After, Target float64
	// Bytes is the state the moves carry, the sum of their groups' bytes.
	Bytes int64
	// Loads is each channel's load after the moves (records).
	Loads []uint64
	// Small says that moves were found but dropped because they would
	// lower the skew by less than MinGain: Moves is empty, After equals
	// Before and Loads is the table's.
	Small bool
}

// Skew is max(loads) / mean(loads): 1 for an even load, and for no load
// or no channels.
func Skew(loads []uint64) float64 {
	var total, top uint64
	for _, l := range loads {
		total += l
		top = max(top, l)
	}
	if total == 0 {
		return 1
	}
	return float64(top) * float64(len(loads)) / float64(total)
}

// ChannelLoads sums the groups' loads per owner: owners[g] is key group
// g's channel in [0, channels).
func ChannelLoads(owners []int, channels int, load []uint64) []uint64 {
	out := make([]uint64, channels)
	for g, o := range owners {
		out[o] += load[g]
	}
	return out
}

// Rebalance plans moves that bring the skew of owners (key group g on
// channel owners[g], channels channels) under target (≤ 1 or NaN:
// DefaultTarget) for the given load (records per key group) and bytes
// (state bytes per key group), moving few bytes (the package doc gives
// the heuristic and its bound). owners, load and bytes have one element
// per key group; they are not modified. A plan with no moves says the
// target is met, cannot be approached by moving whole key groups, or
// would gain less than MinGain (Small).
func Rebalance(owners []int, channels int, load []uint64, bytes []int64, target float64) Plan {
	p := plan(owners, channels, load, bytes, target)
	if len(p.Moves) > 0 && p.Before-p.After < MinGain {
		return Plan{Before: p.Before, After: p.Before, Target: p.Target, Loads: ChannelLoads(owners, channels, load), Small: true}
	}
	return p
}

// plan is Rebalance without the MinGain rule.
func plan(owners []int, channels int, load []uint64, bytes []int64, target float64) Plan {
	if !(target > 1) {
		target = DefaultTarget
	}
	loads := ChannelLoads(owners, channels, load)
	p := Plan{Before: Skew(loads), Target: target}
	var total, heavy uint64
	for g := range owners {
		total += load[g]
		heavy = max(heavy, load[g])
	}
	if total == 0 || channels < 2 {
		p.After, p.Loads = p.Before, loads
		return p
	}
	mean := float64(total) / float64(channels)
	bound := max(target*mean, float64(heavy))
	p.Target = bound / mean
	// T as an integer load: a channel at or under it meets the target.
	t := uint64(math.Floor(bound))
	moved := make([]bool, len(owners))
	own := slices.Clone(owners)
	var cands []int
	for {
		h, l := 0, 0
		for c := range loads {
			if loads[c] > loads[h] {
				h = c
			}
			if loads[c] < loads[l] {
				l = c
			}
		}
		if loads[h] <= t || loads[l] >= t {
			break
		}
		excess, room := loads[h]-t, t-loads[l]
		cands = cands[:0]
		for g, o := range own {
			if o == h && !moved[g] && load[g] > 0 && load[g] <= room {
				cands = append(cands, g)
			}
		}
		if len(cands) == 0 {
			break
		}
		take := cover(cands, load, bytes, excess, room)
		for _, g := range take {
			p.Moves = append(p.Moves, kvstate.Move{Group: g, From: h, To: l})
			p.Bytes += bytes[g]
			moved[g], own[g] = true, l
			loads[h] -= load[g]
			loads[l] += load[g]
		}
	}
	p.After, p.Loads = Skew(loads), loads
	return p
}

// cover picks groups among cands (each with 0 < load ≤ room) whose loads
// sum to at least excess and at most room, with few bytes: the greedy
// cover by load per byte or the best single group (package doc). When no
// set reaches excess it returns the greedy set, which sheds what fits.
func cover(cands []int, load []uint64, bytes []int64, excess, room uint64) []int {
	slices.SortFunc(cands, func(a, b int) int {
		// load[a]/(bytes[a]+1) > load[b]/(bytes[b]+1), without division.
		ra := float64(load[a]) * float64(bytes[b]+1)
		rb := float64(load[b]) * float64(bytes[a]+1)
		if c := cmp.Compare(rb, ra); c != 0 {
			return c
		}
		if c := cmp.Compare(load[b], load[a]); c != 0 {
			return c
		}
		return a - b
	})
	var greedy []int
	var shed uint64
	var greedyBytes int64
	for _, g := range cands {
		if shed >= excess {
			break
		}
		if shed+load[g] <= room {
			greedy = append(greedy, g)
			shed += load[g]
			greedyBytes += bytes[g]
		}
	}
	single := -1
	for _, g := range cands {
		if load[g] >= excess && (single < 0 || bytes[g] < bytes[single] || (bytes[g] == bytes[single] && g < single)) {
			single = g
		}
	}
	if single >= 0 && (shed < excess || bytes[single] <= greedyBytes) {
		return []int{single}
	}
	return greedy
}

// Cost is the pause a step of moves causes, in the package doc's model:
// GroupNs per key group handed over plus its state bytes at BytesPerNs.
type Cost struct {
	GroupNs    float64 // ns per key group handed over
	BytesPerNs float64 // state bytes serialised per ns (a snapshot in flight)
}

// DefaultCost is the model measured on a 2-vCPU EPYC VM
// (docs/PERFORMANCE-LOG.md, "Rebalancing"): 25 ns a key group, 1.5 bytes per
// ns.
var DefaultCost = Cost{GroupNs: 25, BytesPerNs: 1.5}

// Ns is the modelled pause of handing over groups key groups holding
// bytes state bytes, ns.
func (c Cost) Ns(groups int, bytes int64) float64 {
	return float64(groups)*c.GroupNs + float64(bytes)/c.BytesPerNs
}

// Steps cuts moves, in their order, into consecutive steps whose
// modelled pause (cost.Ns of their groups and bytes) is at most maxPauseNs;
// a move whose cost alone exceeds it is a step of its own. bytes has one
// element per key group. No moves: no steps.
func Steps(moves []kvstate.Move, bytes []int64, cost Cost, maxPauseNs float64) [][]kvstate.Move {
	var steps [][]kvstate.Move
	var cur []kvstate.Move
	var curBytes int64
	for _, m := range moves {
		if len(cur) > 0 && cost.Ns(len(cur)+1, curBytes+bytes[m.Group]) > maxPauseNs {
			steps = append(steps, cur)
			cur, curBytes = nil, 0
		}
		cur = append(cur, m)
		curBytes += bytes[m.Group]
	}
	if len(cur) > 0 {
		steps = append(steps, cur)
	}
	return steps
}
