// Package kvstate holds keyed state in key groups.
//
// A key's hash (xxhash, computed once at the splitter) picks its key group
// (KeyGroup); a Table maps every key group to the channel that owns it,
// built with jump consistent hashing (Lamping and Veach, "A Fast, Minimal
// Memory, Consistent Hash Algorithm", 2014) so that going from N to N±1
// channels moves only about 1/N of the key groups (Gedik et al., IEEE TPDS
// 25(6) 2014, §5: incremental migration with consistent hashing).
//
// Invariants:
//
//   - The number of key groups is a power of two, fixed for the life of a
//     job and of its checkpoints (default DefaultGroups).
//   - A key group is owned by exactly one channel at a time. Only its owner
//     reads or writes its state, so a Map needs no locks: moving a key group
//     to another channel is a hand-off of ownership (the groups stay where
//     they are in memory), made safe by the runtime's in-band markers, which
//     order the old owner's last access before the new owner's first.
package kvstate
