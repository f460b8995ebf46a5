// Package plan is the description of a job: what runs, not how it is run.
//
// A Job is a graph of a source, a chain of operators before the parallel
// region, the Region (its operators replicated into channels behind a
// splitter that routes records by key → key group → channel, in front of
// a merger that restores the splitter's order), a chain after it and a
// sink; with its EventTime (where event time comes from, how watermarks
// are generated), its Checkpointing, and the Elastic and Rebalance
// settings of the region. The job loader (core/jobfile) produces one from
// a job.yaml; a Go program may build one by hand from core's operators,
// sources and sinks.
//
// The public surface of the engine for a Go user is:
//
//   - this package: the job description, and what can be checked of it
//     before a run (Job.Validate, RegionOrderKept, CheckRestore,
//     VerifyOutput, RestoredUpdates);
//   - core: the operator, source and sink interfaces (core.Operator,
//     core.OperatorDef, core.Source, core.Splittable, core.Sink,
//     core.EpochSink, ...), batches, values and schemas;
//   - core/runtime's Run (runs a Job to its end), its Options (Placement,
//     OnStart) and Live (live control: Scale, Rebalance, Update,
//     Checkpoint, Stop; counters, Plan, Report), with the control plane's
//     Policy, Metrics and Action.
//
// Everything else in core/runtime (stages, rings, the splitter, the
// merger, the exchange, the protocols of live changes, checkpoints and
// updates) is machinery a Go user does not touch.
//
// Invariants:
//
//   - The package holds data and checks of data: it starts no goroutine,
//     reads no clock, and imports no runtime machinery (core/runtime and
//     its packages); a test says so.
//   - A Job is the whole of what decides a run's output, with the records
//     its source reads and the checkpoint it restores from: the tuning
//     fields (parallelism, ring sizes, buffering, batching) and the
//     runtime's Options never change it (docs/ARCHITECTURE.md,
//     "Determinism").
//   - A Job is run once: runtime.Run owns its source, sink, error policy
//     and operator instances from the call on, and fills in defaults.
package plan
