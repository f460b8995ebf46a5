// Package jobfile reads a job.yaml into a job description (plan.Job),
// ready for runtime.Run. It does not import the runtime (TestNoRuntime):
// what depends on the machine running the job comes in through Options
// (Cores).
//
// The file is decoded strictly: an unknown key, a value of the wrong type, a
// missing required key or a reference to a field that does not exist is an
// error naming the file, line and column, and what was expected. Values may
// use ${VAR} and ${VAR:-default} environment interpolation; relative paths
// are relative to the job file's directory. docs/JOB.md documents every key.
//
// Operators, sources and sinks are kinds in a registry (registry.go), one
// file each (op_*.go, source_*.go, sink_*.go): a kind's file holds its spec
// type, its builder and its registration, and nothing else in the package
// names it. Every expression is compiled once (compileExpr), and the
// program that reported its errors is the one the operator runs.
package jobfile
