// Package markers is the merger's view of the markers its channels
// deliver (docs/ARCHITECTURE.md, "Splitter, channels, merger"): which
// channel has ended, when a marker is aligned across the channels and
// what the merger does with it — hand on a barrier of epoch e, end the
// stage at End, switch to another channel set at a change.
//
// The splitter broadcasts every marker (a watermark, a checkpoint
// barrier, End, a change of the channel set, a change of logic) to every
// channel with one sequence number; each channel forwards it in FIFO
// order among its output. The merger (order.Merger) releases a marker
// when every channel's head is that marker, after every record ordered
// before it; Aligner checks and carries out that release: Read is told of
// each marker as the merger reads it from channel c's ring, Aligned of
// each marker the merger releases. A channel ends when its End is read,
// or a change retiring it (one to fewer channels than its index): nothing
// follows on its ring, which may then close. A change takes effect at its
// alignment: the channels it keeps keep what they delivered beyond it
// (a kept channel may already have read its End, or the next change), and
// those it adds start with nothing.
//
// It is a deterministic core: no goroutines, no clock, no I/O. The
// merger's goroutine is its driver: it reads the rings, tells Aligner
// what it read, asks Ended whether a closed ring is an end or a failure
// (a channel that stops before its End means another stage failed), and
// carries out what Aligned returns.
//
// Invariants:
//
//   - Each channel's markers come in non-decreasing sequence numbers, and
//     its barriers in increasing epochs; nothing comes after its end.
//   - A marker is aligned once, when every channel of the current set
//     delivered it, with the same kind and sequence number; the epochs of
//     the barriers aligned increase.
//   - After End is aligned nothing more is: the stage is done.
//
// Aligner is not safe for concurrent use: one driver goroutine owns it.
package markers
