// Package ops holds streamd's stateless and lookup operators: Filter, Map,
// Project, LookupCSV and LookupHTTP. Each constructor binds the operator to
// its input schema and returns a core.OperatorDef; expressions are compiled
// and lookup tables loaded once, in the constructor, and shared read-only by
// the instances of all channels.
//
// Invariants:
//
//   - Process borrows its input batch (core.Operator). Filter compacts it in
//     place and passes it on with out.Emit; the other operators write new
//     records through out.Append and leave the input to the caller.
//   - Every output record keeps the Seq, Hash, Time and Pos of the input
//     record it came from, so the merger's order and error positions hold.
//   - A record that cannot be processed (an expression's run-time error, a
//     failed lookup) goes through the job's core.ErrorPolicy: the job fails
//     with a *core.RecordError, or the record is skipped or dead-lettered.
//   - Filter, Map and Project do not allocate per record when their
//     expressions are on eval's fast path.
package ops
