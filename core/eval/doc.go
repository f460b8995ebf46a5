// Package eval compiles expressions over records (filter conditions, map
// fields) written in expr-lang/expr syntax, once per job, and evaluates them
// per record without allocating.
//
// Compile parses and type-checks an expression against a core.Schema with
// expr-lang's parser and checker; every field is a variable of its name.
// The checked AST is then compiled into a tree of typed Go closures (the
// fast path) that read fields straight from a record's []core.Value: field
// references, int/float/string/bool literals, + - * / % ** with int→float
// promotion, comparisons, && || !, unary minus, ==/!=/< on strings,
// contains/startsWith/endsWith/matches "literal", in [literal, …], the
// ternary ?:, timestamp comparisons, ts ± duration("literal") and a
// duration times an integer (duration("1s") * secs), and the
// builtins len (of strings), abs, lower, upper, int, float, ceil, floor,
// round. Anything else (member access, method calls such as ts.Year(), let,
// closures such as filter(), date(), now(), …) falls back to expr-lang's
// vm.Run with a pooled, reused env map; that path boxes the fields the
// expression reads and so allocates per record.
//
// Invariants:
//
//   - The fast path and the vm give identical results, errors included (a
//     rapid property test checks it on random records and expressions).
//   - A Program is immutable after Compile and safe for concurrent use.
//   - Evaluation never panics: run-time failures (integer % by zero, vm
//     errors) are *Error values.
//   - Positions in *Error are 1-based line and column (in characters) within
//     the expression source, for the job loader to shift into job.yaml.
package eval
