package runtime

import (
	"streamd/core"
	"streamd/core/plan"
)

// The job description lives in core/plan; these names stay as aliases
// for the runtime's own tests. New code uses plan's.
type (
	// Job is plan.Job.
	//
	// Deprecated: use plan.Job.
	Job = plan.Job
	// EventTime is plan.EventTime.
	//
	// Deprecated: use plan.EventTime.
	EventTime = plan.EventTime
	// Region is plan.Region.
	//
	// Deprecated: use plan.Region.
	Region = plan.Region
	// Checkpointing is plan.Checkpointing.
	//
	// Deprecated: use plan.Checkpointing.
	Checkpointing = plan.Checkpointing
	// Elastic is plan.Elastic.
	//
	// Deprecated: use plan.Elastic.
	Elastic = plan.Elastic
	// Rebalance is plan.Rebalance.
	//
	// Deprecated: use plan.Rebalance.
	Rebalance = plan.Rebalance
)

// Placer starts the job's stage goroutines, pinned to cores where it can
// (see CorePlacer). stage is "source", "merger" or "channel"; index is the
// channel. Start returns at once; wait blocks until run has returned.
type Placer interface {
	Start(stage string, index int, run func()) (wait func())
}

// goPlacer runs every stage on a plain goroutine.
type goPlacer struct{}

func (goPlacer) Start(_ string, _ int, run func()) func() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		run()
	}()
	return func() { <-done }
}

// RegionOrderKept is plan.RegionOrderKept.
//
// Deprecated: use plan.RegionOrderKept.
func RegionOrderKept(ops []core.OperatorDef) (ok bool, at int) { return plan.RegionOrderKept(ops) }
