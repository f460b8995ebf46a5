// Package runtime runs a job (core's operators, sources and sinks): it
// builds the stages, wires them with ring.SPSC buffers on sched workers,
// and owns the splitter, the channels of the parallel region, the merger,
// live channel changes (rescale.go: prepare → sync → update, Trisk, SoCC
// 2021), checkpoints (checkpoint.go: asynchronous barrier snapshots,
// Carbone et al. 2015), placement and the report.
//
// Operators never import this package. The one tie between a batch and the
// runtime is a marker's Control payload (a reconfiguration or a barrier),
// which only this package reads.
package runtime
