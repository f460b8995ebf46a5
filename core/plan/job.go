package plan

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"streamd/core"
)

// Job is a job graph, ready to run: a source, a chain of operators before
// the parallel region, the region (a chain replicated into channels behind
// a splitter, in front of a merger), a chain after it, and a sink; with
// how event time is read, how the job checkpoints, and how the runtime may
// tune it. Each OperatorDef is bound to the schema its predecessor
// produces (the job loader, core/jobfile, does that).
//
// A Job is handed to runtime.Run, which owns its source, sink, error
// policy and operator instances from then on (it closes them) and fills in
// defaults (Errors, RingSize): run a Job once. None of the tuning fields
// (SourceParallelism, OutputParallelism, RingSize, BufferTarget,
// BatchLinger) changes the output: only the graph, the event time and the
// checkpoint restored from do.
type Job struct {
	Name      string
	Source    core.Source
	EventTime EventTime
	Pre       []core.OperatorDef
	// Region is the parallel region; nil runs the whole job on one stage.
	Region *Region
	Post   []core.OperatorDef
	Sink   core.Sink
	Errors *core.ErrorPolicy
	// SourceParallelism is how many source workers read a source that can be
	// split (core.Splittable) in a job with a region (the runtime's
	// exchange.go): 0 chooses (the cores beside the channels, the merger and
	// one to spare, at least 1, at most one per block), a negative value
	// keeps the single source stage. Live channel changes, rebalance steps,
	// control requests and barriers are placed at block boundaries under the
	// exchange's lock, so they work with workers too. The output does not
	// depend on it. Pre-region operators must be stateless per record: each
	// worker runs its own instances.
	SourceParallelism int
	// SourceCores is how many cores source workers and channels share
	// when both are automatic (SourceParallelism 0 and a region whose
	// channel count changes): a change to n channels gives SourceCores − n
	// workers (at least 1). 0: the usable cores less the merger and one
	// spare.
	SourceCores int
	// OutputParallelism is how many output workers run the post-region
	// operators and encode for an encoding sink (core.EncodingSink) while the
	// merger only merges (the runtime's output.go): > 0 that many, 0 as the
	// cores allow (none on a small machine), < 0 none. With checkpoints the
	// barriers go through the workers in their place in the order and the
	// writer takes the sink's checkpoint step. The output does not depend on
	// it. Post-region operators must be stateless per record. A sink of parts
	// (core.PartSink) has one worker per part, whatever this says.
	OutputParallelism int
	// RingSize is the capacity of every ring, in batches (default 64).
	RingSize int
	// BufferTarget bounds the data in flight between stages by time
	// (buffer debloating, the runtime's debloat.go): under backpressure
	// each ring's effective capacity follows its consumer's measured
	// throughput so that draining it takes about BufferTarget, within [4,
	// RingSize] batches ([1, RingSize] items for the rings around the
	// output workers). 0 chooses: a quarter of the checkpoint interval,
	// at most 1 s, when the job checkpoints on an interval, else off. < 0:
	// off (every ring holds RingSize). It changes buffering only, never
	// blocks, batches or watermarks: the output does not depend on it.
	BufferTarget time.Duration
	// BatchLinger is adaptive batching at the single source stage's splitter
	// (the runtime's batching.go): while a channel is busy, its sub-batches
	// and the watermarks between them are gathered into one batch, handed
	// over when it holds 512 records, when the channel waits for input, or
	// BatchLinger after the splitter first found the channel busy with it. 0
	// chooses DefaultBatchLinger (1 ms); < 0: off, every source batch's
	// sub-batch and watermark go to the ring at once. It changes data batch
	// boundaries only, never records, markers or their order: the output does
	// not depend on it. Source workers gather only when it is set (> 0), each
	// within a block: by default they do not, as on the flights job gathering
	// there cost 5–24 % more CPU at 2–4 channels (docs/ARCHITECTURE.md,
	// "Adaptive batching").
	BatchLinger time.Duration
	// Log receives the run's log (checkpoints, live changes, the elastic
	// controller's decisions); nil discards it.
	Log *slog.Logger
	// Checkpoint, if set, takes asynchronous barrier snapshots (and
	// restores from one).
	Checkpoint *Checkpointing
	// OnSink, if set, sees every data batch on the sink's goroutine just
	// before the sink writes it (latency measurement: Batch.Stamp). It
	// borrows the batch. With output workers (OutputParallelism) the
	// writer calls it, once per encoded batch, with a batch that holds
	// only Len and Stamp; with a sink of parts every part's worker calls
	// it, concurrently.
	OnSink func(*core.Batch)
}

// DefaultBatchLinger is how long the splitter holds a channel's gathered
// sub-batch while the channel is busy, by default (Job.BatchLinger): 1 ms
// is ten source lingers (core.Linger), so a busy channel's ring receives
// about one slot per ms at a low rate and covers ~64 ms of descheduling.
// Records never wait longer than they would have in the ring: a channel
// that runs out of input takes what is gathered at once.
const DefaultBatchLinger = time.Millisecond

// EventTime says where records' event time comes from and how watermarks
// are generated (bounded out-of-orderness).
type EventTime struct {
	// Field is the source field holding event time ("" = none): a
	// timestamp field, or an int64 field counted in Unit.
	Field string
	// Unit is the length of one int64 unit in ns (default 1 ms).
	Unit int64
	// MaxOutOfOrder is how far behind the largest event time seen a record
	// may still arrive, in ns: the watermark is max - MaxOutOfOrder - 1.
	MaxOutOfOrder int64
	// MaxAhead, if > 0, is how far ahead of its reference a record's event
	// time may be, in ns; a record further ahead is malformed (on_error)
	// and does not move the watermark (the runtime's ahead.go says what
	// the reference is). 0 is off.
	MaxAhead int64
	// Of, if set, computes a record's event time in ns from its fields
	// (a record of the source's schema; Of must not keep it), in place of
	// Field. Source workers call it at once: it must be safe for
	// concurrent use. A record it returns an error for is malformed: it
	// goes through the job's on_error policy, named by Input and its
	// position, and is dropped from its batch (counted, never lost
	// silently).
	Of func(row []core.Value) (int64, error)
	// Input names the input in Of's and MaxAhead's errors (the source's
	// file).
	Input string
}

// Region is a parallel region: operators replicated into Channels channels
// behind a splitter and in front of a merger.
type Region struct {
	// Channels is the channel count (≥ 1).
	Channels int
	// Key lists the fields records are partitioned by (xxhash → key group
	// → owning channel); empty means a stateless region fed round-robin.
	Key []string
	// Groups is the number of key groups (a power of two; default 4096).
	Groups int
	// Unordered lets the merger emit channels' outputs in arrival order.
	Unordered bool
	Ops       []core.OperatorDef
	// MaxChannels bounds live channel changes (default Channels).
	MaxChannels int
	// Elastic, if set, lets a controller change the channel count while the
	// job runs.
	Elastic *Elastic
	// Rebalance, if set on a keyed region, evens out the channels' load
	// under key skew at the same channel count (the runtime's
	// balance.go); nil: off.
	Rebalance *Rebalance
	// Schedule, if set (tests, demos), is asked after every source batch
	// (numbered from 1) for the channel count; 0 keeps the current one.
	// It runs as the region's own controller (the runtime's
	// controller.go) in place of Elastic's.
	Schedule func(batch int64) int
	// Timeline, if set, receives the region's reconfiguration timeline as CSV
	// (the runtime's timeline.go; docs/JOB.md, `--elastic-log`): a row per
	// period of the elastic controller, per change of the channel count it
	// did not decide, per rebalance plan and per rebalance step.
	Timeline io.Writer
}

// RegionOps are the operators of the job's region (nil without one).
func (j *Job) RegionOps() []core.OperatorDef {
	if j.Region == nil {
		return nil
	}
	return j.Region.Ops
}

// Validate checks what a job needs before it can run: a source, a sink, a
// region of at least one channel, and no checkpoints with a sink of parts.
// runtime.Run calls it first.
func (j *Job) Validate() error {
	if j.Source == nil {
		return fmt.Errorf("job %q: no source", j.Name)
	}
	if j.Sink == nil {
		return fmt.Errorf("job %q: no sink", j.Name)
	}
	if _, ok := j.Sink.(core.PartSink); ok && j.Checkpoint != nil {
		return fmt.Errorf("job %q: a sink of parts cannot be checkpointed yet (exactly-once output is built for one file)", j.Name)
	}
	if j.Region != nil && j.Region.Channels < 1 {
		return fmt.Errorf("job %q: a region needs at least 1 channel, not %d", j.Name, j.Region.Channels)
	}
	return nil
}
