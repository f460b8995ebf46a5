// Package core is what operators, sources and sinks implement and use:
// typed values and schemas, pooled record batches, the batch-at-a-time
// operator interface, fused operator chains, the error policy, copy-on-write
// snapshots of key groups, replayable sources and the exactly-once sink
// interfaces. The runtime that runs a job
//
//	source → pre-region operators → splitter → N channels → merger → post-region operators → sink
//
// over ring.SPSC buffers on sched workers is package core/runtime; core
// imports none of ring, sched, order, elastic or snapshot.
//
// Invariants:
//
//   - Records move in batches ([Batch]); a batch has exactly one owner at a
//     time. Whoever holds it either passes it on (Emitter.Emit, a ring push) or
//     releases it to its pool. Nothing on the data path allocates per record.
//   - Control travels in-band: watermarks, pulses, barriers and end-of-stream
//     are marker batches in the same FIFO rings as data, so nothing overtakes
//     data on a side path. A marker's runtime payload ([Batch.Control]) is
//     opaque here.
//   - Every record entering a parallel region gets a sequence number from the
//     splitter; the merger restores that order (plus, for records produced at
//     one trigger, the region's declared tie order), so the output of a job
//     whose region is stateless or key-partitioned never depends on the
//     channel count.
package core
