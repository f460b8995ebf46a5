// Package balance computes key-group tables that even out the load of a
// parallel region's channels under skew without changing their count,
// and splits the moves into steps whose pause stays under a bound. It is
// a pure function of the figures it is given: no goroutines, no clock,
// no state; the runtime measures, calls Plan and Steps, and carries the
// steps out (core/runtime/balance.go).
//
// # The problem
//
// Each key group g has a load (records in the last period) and a state
// size in bytes; a table assigns it to one of N channels. A channel's load
// is the sum of its groups'; skew is max channel load / mean. Given the
// current table and a target skew, find a table with skew ≤ target that
// moves the fewest state bytes. This is the routing-table update problem
// of fine-grained state migration (Hoffmann et al., Megaphone, PVLDB 12(9),
// 2019, moves key bins in batches; choosing which bins is the problem
// here). With one channel pair it is a minimum knapsack cover (shed at
// least the excess, receive at most the spare room, minimise bytes); with
// N channels it contains multiway partition, so it is NP-hard and Plan is
// a greedy heuristic.
//
// # The heuristic (Plan)
//
// The bound is T = max(target · mean, heaviest group's load): no table
// can put a group's load on less than one channel, so a target below the
// heaviest group's share is raised to it (Plan.Target reports the target
// used). Repeat: take the most loaded channel h (lowest index on ties);
// stop when its load L_h ≤ T. Take the least loaded channel l. The excess
// is E = L_h − T, the room C = T − L_l. The candidates are h's groups with
// a positive load ≤ C that have not moved in this plan. Two covers are
// built from them:
//
//   - greedy: candidates by load per byte (load / (bytes + 1)), highest
//     first, each taken if it still fits the room, until E is shed;
//   - single: the candidate with load in [E, C] and the fewest bytes.
//
// The single one is taken when it exists and costs no more bytes than the
// greedy one or the greedy one does not shed E; else the greedy one. The
// chosen groups move h → l and the loop goes on. No candidate: stop (the
// key-group granularity allows no better; Plan.After says what was
// reached). A plan whose moves lower the skew by less than MinGain (0.01)
// is dropped (Plan.Small): when one hot group alone sets the maximum, its
// channel can still shed a few light groups, which would pause two
// channels for nothing.
//
// Cost model and bounds. The cost of a plan is the state bytes it moves
// (Plan.Bytes); the load is records, taken as proportional to the work
// (every record of a region costs its channel about the same). A channel
// that receives never exceeds T, so it never becomes a source: a group
// moves at most once, and Plan runs at most G rounds of O(G log G) (G key
// groups). For each round's channel pair, greedy-by-ratio together with
// the best single item is the classic 2-approximation of the minimum
// knapsack cover, so a round moves at most twice the bytes of the
// cheapest set of h's groups that sheds the same excess into l; across
// rounds there is no bound (which pairs to pair is the hard part). When
// the loop stops with L_h ≤ T, skew ≤ T/mean, the target met.
//
// # Steps (Steps)
//
// A move is carried out live: at a marker the old owner releases the key
// groups and the new owner adopts them (core/runtime/rescale.go). The
// state stays in the shared maps, so the handoff costs per group (the
// firing index, ~25 ns a group measured by BenchmarkMigrateGroups), and
// per byte only when a copy-on-write snapshot is in flight, which must
// serialise the groups before their new owner changes them (~1.5 state
// bytes per ns, BenchmarkSnapshotGroups). Cost.Ns is that worst case; Steps
// cuts the moves, in order, into steps whose cost stays within the pause
// bound (a group over the bound on its own gets a step of its own).
package balance
