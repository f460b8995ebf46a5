// Package core holds streamd's data model and runtime: typed values and
// schemas, pooled record batches, the batch-at-a-time operator interface,
// fused operator chains, and the runtime that wires
//
//	source → pre-region operators → splitter → N channels → merger → post-region operators → sink
//
// over ring.SPSC buffers on sched workers.
//
// Invariants:
//
//   - Records move in batches ([Batch]); a batch has exactly one owner at a
//     time. Whoever holds it either passes it on (Emitter.Emit, a ring push) or
//     releases it to its pool. Nothing on the data path allocates per record.
//   - Control travels in-band: watermarks, pulses, barriers and end-of-stream
//     are marker batches in the same FIFO rings as data, so nothing overtakes
//     data on a side path.
//   - Every record entering a parallel region gets a sequence number from the
//     splitter; the merger restores that order (plus, for records produced at
//     one trigger, the region's declared tie order), so the output of a job
//     whose region is stateless or key-partitioned never depends on the
//     channel count.
package core
