// Package window holds streamd's keyed, stateful operators: event-time
// windows (tumbling and sliding) with aggregates, and a running aggregate
// without windows. Their state lives in kvstate key groups, partitioned by
// the hash the splitter computed for the region's key.
//
// Event time follows the watermark convention of Flink and of Akidau et
// al., "The Dataflow Model" (PVLDB 8(12), 2015): a watermark W says no record
// with event time ≤ W is expected any more. A window [start, end) fires when
// the watermark reaches end-1 and expires when it reaches end-1 plus the
// allowed lateness (Spec.AllowedLateness; 0: when it fires); a record is
// late when every window it belongs to has expired, and a record that
// reaches a window which fired and has not expired fires it again (a late
// firing, at the record's sequence number).
//
// Determinism: results released by one watermark are emitted in a defined
// order — window end, then key — and stamped with the watermark's sequence
// number, and the operator exports that order (core.OperatorDef.Order) so
// the merger can interleave channels without the output depending on the
// channel count.
package window
