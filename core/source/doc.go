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
//     (docs/ARCHITECTURE.md, "Hot-path rules", 5), and every Next returns
//     ctx.Err() promptly once ctx is done.
//
// JSON is parsed by streamd's own small validating parser (jsonl.go), not a
// library: a paired benchmark (BenchmarkJSONParser: the same lines, fields
// and interning; docs/PERFORMANCE-LOG.md, "JSON — library or ours") found
// valyala/fastjson about as fast on flat lines (within the noise of a
// shared machine, ours ahead in most pairs) and tidwall/gjson about 3×
// slower with 4 allocations a line. Ours walks only the paths the fields
// name and skips the rest without building a tree, which a tree-building
// library cannot do for nested documents, and its errors say where and
// what (column, expected and found), which the job's on_error policy
// reports. So ours stays; the benchmark is kept to revisit the choice.
package source
