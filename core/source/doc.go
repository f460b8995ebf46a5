// Package source holds streamd's built-in sources: Parquet and CSV files,
// JSON Lines, standard input and a synthetic generator. Each returns a
// [core.Source].
//
// Invariants:
//
//   - Every data batch comes from core.NewBatch(schema) with Len ≥ 1; the
//     source fills the record fields and Pos (the 1-based input line for
//     text formats, counting a CSV header line, or the 1-based row for
//     Parquet and the generator) and leaves Seq, Hash and Time zero
//     (core.NoTime) for the runtime. The caller owns the batch Next
//     returns.
//   - No heap allocation per record on the steady path: values are decoded
//     into pooled batches, and strings of low-cardinality columns are
//     interned (see interner), so repeated strings share one allocation.
//   - A malformed record goes to the job's core.ErrorPolicy, never crashes
//     the job and is never silently dropped: under Fail, Next returns the
//     policy's *core.RecordError (input:line: field "x": reason); under Skip
//     or DeadLetter the source continues with the next record. A nil policy
//     means Fail.
//   - Sources that wait for input (Stdin, a rate-limited Generator) hand over
//     a partial batch at most core.Linger ns after its first record arrived
//     (DESIGN.md, hot-path rule 5), and every Next returns ctx.Err() promptly
//     once ctx is done.
package source
