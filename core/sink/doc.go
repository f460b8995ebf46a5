// Package sink holds streamd's built-in sinks: CSV and JSON Lines files,
// directories of part files in either format (core.PartSink, parts.go),
// standard output in either format, and Kafka topics (kafka.go: each
// record a Kafka record; exactly-once by a transaction per checkpoint
// epoch). Each implements [core.Sink].
//
// Invariants:
//
//   - A file sink never shows partial output under its final name: it writes
//     a temporary file in the destination's directory (".<name>.tmp-*"),
//     and Close flushes, fsyncs, renames it over the final name and fsyncs
//     the directory. Abort (or a failed Close) removes the temporary file
//     and leaves any earlier file at the final name untouched. A sink of
//     parts does the same with a temporary directory of part files.
//   - Records are formatted into one reused buffer of at least 256 KiB
//     (core.AppendText and hand-written quoting and escaping), written out
//     when it fills: no allocation per record.
//   - Write borrows the batch: it formats the records before it returns and
//     keeps no reference; the caller releases the batch.
//   - Text forms: integers in decimal, floats in the shortest form that
//     round-trips, timestamps in RFC 3339 UTC (2001-01-01T00:00:00Z, with a
//     fraction only when non-zero), bools as true/false.
package sink
