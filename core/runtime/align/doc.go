// Package align is the state of a stage with several inputs: which input
// is held for barrier alignment, when a barrier is complete, and the
// stage's watermark from its inputs' watermarks (docs/ARCHITECTURE.md,
// "Determinism", several inputs).
//
// It is a deterministic core: no goroutines, no clock, no I/O. A driver
// (a stage's loop) reads its inputs, tells Inputs what it read (Data,
// Watermark, Barrier, End) and what its clock decided (Idle), and carries
// out the decisions: read only inputs that are not held (Next, Held), send
// a barrier downstream when Barrier or End reports it complete, forward
// Output when it rises. Inputs holds no records: a held input is simply
// not read, so the memory it takes is its ring's (backpressure on its
// producer), never the stage's.
//
// Invariants:
//
//   - Output never moves backwards.
//   - A barrier epoch is reported complete once, when every input that is
//     not ended has delivered it; an ended input counts as aligned.
//   - While epoch e is aligning, an input that delivered e is held; every
//     held input is released when e completes.
//   - Epochs increase: an input delivering an epoch twice, an epoch other
//     than the one aligning, or one not above the last completed is an
//     error, and so is anything delivered by an ended input, or data or
//     an end by a held one.
//
// Inputs is not safe for concurrent use: one driver goroutine owns it.
package align
