// Package logic is the update sync protocol (docs/ARCHITECTURE.md, "Change
// of logic"): a live update replaces one operator's definition at a sync
// point, every record before it seen by the old logic and every record
// after it by the new, in every stage that runs an instance of the
// operator.
//
// It is a deterministic core, the shape of etcd's raft: no goroutines, no
// clock, no I/O, no lock. Two types:
//
//   - Log is the routing side, owned by the goroutine that routes (the
//     single source stage, or the source workers under the exchange's
//     lock). Check decides whether an update is refused; Place gives a
//     placed update its epoch (1, 2, … in the order placed) and its sync
//     point, keeps the latest entry per operator for the checkpoints after
//     it (Records), and the first block a barrier may go in (Floor); At
//     is the update whose marker goes before a block; Due the updates a
//     source worker takes when it starts a block; after End nothing is
//     placed.
//   - Follower is one stage's side: the epoch of the logic its instances
//     run. A stage meets the updates' markers in epoch order (Meet) and
//     swaps its instance when the update targets its stage; a stage
//     started later starts at the Log's epoch (Follow), with the
//     definitions as of then, and meets only the markers placed after.
//
// The drivers in package runtime: control.go places (serveControl,
// placeControl), commitUpdate keeps the definitions stages started later
// instantiate; the channels, the source workers, the single source stage
// and the output workers follow.
//
// Invariants:
//
//   - Epochs increase by one per update placed; sync points do not move
//     back (with blocks, each update's block is above the last one's: one
//     marker per block).
//   - A follower meets epoch e only right after e−1: a marker met twice,
//     or one skipped, is ErrEpoch (a bug upstream: the stage fails).
//   - No barrier goes in a block before the newest update's (Floor): the
//     checkpoints after it record it, and a restore from them builds the
//     new logic.
package logic
