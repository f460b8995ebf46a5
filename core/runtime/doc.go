// Package runtime runs a job (core's operators, sources and sinks): it
// builds the stages, wires them with ring.SPSC buffers on sched workers,
// and owns the splitter, the channels of the parallel region, the merger,
// live channel changes (rescale.go: prepare → sync → update, Trisk, SoCC
// 2021), checkpoints (checkpoint.go: asynchronous barrier snapshots,
// Carbone et al. 2015), placement and the report.
//
// What a Go user touches here is small: Run, which runs a job description
// (core/plan's Job, built by hand or by core/jobfile) to its end; its
// Options (Placement, with JobPlacer to pin the stages to cores;
// OnStart); Live, the running job's live control
// (Scale, Rebalance, Update, Checkpoint, Stop, PauseController) and
// counters (Snapshot, Plan, Report); the control plane's Policy, Metrics,
// Action and RunPolicy; the Report Run returns; and the sentinel errors
// (ErrInterrupted, ErrRefused, ErrEnded, ErrStopped, ErrNoRebalance).
// Job, Region, EventTime, Checkpointing, Elastic and Rebalance are aliases
// of plan's types, deprecated (use plan's). From a job file to a run:
// jobfile.Load (or Parse), File.Build, Run (the package's Example). The
// rest — the stage types
// (channelStage, mergeStage, sourceStage, sourceWorker, outputWorker), the
// exchange, the marker protocols, the checkpoint coordinator, how stages
// are placed and counted — is machinery.
//
// Operators never import this package. The one tie between a batch and the
// runtime is a marker's Control payload (a reconfiguration or a barrier),
// which only this package reads.
package runtime
