package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"streamd/core"

	"streamd/sched"
)

// CorePlacer pins the source stage and the merger stage to the first two
// usable cores and each channel to a core leased from a sched.Allocator.
// It pins only when the machine has more usable cores than the job has
// stages (channels + 2): otherwise it runs everything unpinned and says so
// once. Pinning several busy stages to one core would be slower than
// letting the OS share them, and with no core left over, the Go runtime's
// own threads (GC workers, timers, the checkpoint writer) and the OS can
// only run by preempting a pinned stage, which then cannot move: on a
// 2-vCPU VM, a pinned two-stage pipeline at half its maximum rate had a p99
// latency of 0.33–1.3 ms against 0.19–0.20 ms unpinned, at the same
// throughput (docs/PERFORMANCE-LOG.md, "Latency at half the maximum rate").
type CorePlacer struct {
	alloc    *sched.Allocator
	reserved []sched.Core
	log      *slog.Logger
	pin      bool
}

// NewCorePlacer detects the usable CPU set (affinity mask and cgroup quota)
// for a job of the given channel count, source workers (SourceWorkers; 0
// counts as the one source stage) and output stages (OutputStages) and
// logs where the numbers came from. The first source stage and the merger
// get the two reserved cores; every other source worker, every channel
// and every output stage leases one.
func NewCorePlacer(channels, sources, outputs int, log *slog.Logger) *CorePlacer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cpus := sched.Detect()
	p := &CorePlacer{log: log}
	stages := stageCount(channels, sources, outputs)
	log.Info("cpus", "detail", cpus.String())
	switch {
	case cpus.Cores() < stages:
		log.Info("fewer usable cores than stages: running unpinned", "cores", cpus.Cores(), "stages", stages)
		return p
	case !spareCore(stages, cpus.Cores()):
		log.Info("no usable core to spare beyond one per stage: running unpinned", "cores", cpus.Cores(), "stages", stages)
		return p
	}
	p.pin = true
	p.alloc = sched.NewAllocator(cpus.Usable, sched.AllocatorConfig{Reserved: 2, Logger: log})
	p.reserved = p.alloc.Reserved()
	return p
}

// Pinned reports whether stages are pinned.
func (p *CorePlacer) Pinned() bool { return p.pin }

// Start runs a stage on a sched.Worker, pinned to its core.
func (p *CorePlacer) Start(stage string, index int, run func()) func() {
	if !p.pin {
		return goPlacer{}.Start(stage, index, run)
	}
	cfg := sched.WorkerConfig{Name: fmt.Sprintf("%s-%d", stage, index), Warn: p.log.Warn}
	switch {
	case stage == "source" && index == 0:
		cfg.Core = p.reserved[0]
	case stage == "merger":
		if len(p.reserved) > 1 {
			cfg.Core = p.reserved[1]
		}
	default:
		cfg.Core, _ = p.alloc.Lease()
		cfg.Release = p.alloc.Release
	}
	w := sched.StartWorker(context.Background(), cfg, func(context.Context) error {
		run()
		return nil
	})
	return func() { w.Wait() }
}

// UsableCores is how many cores this process may use: sched.Detect's
// count (the affinity mask and the cgroup CPU quota, rounded down), read
// once. The automatic counts (source workers, output workers, the cores
// source workers and channels share) and the choice between pinned and
// unpinned stages use it, so that a container limited to 2 cores of a
// 64-CPU host gets the defaults of a 2-core machine (runtime.NumCPU sees
// the affinity mask only).
func UsableCores() int { return usableCores() }

var usableCores = sync.OnceValue(func() int { return sched.Detect().Cores() })

// stageCount is how many stage goroutines a job runs at once: its
// channels, its source workers (0 counts as the one source stage), the
// merger and its output stages (OutputStages).
func stageCount(channels, sources, outputs int) int {
	return channels + max(1, sources) + 1 + outputs
}

// spareCore reports whether cores leave one over beyond a core per stage.
// Only then are stages pinned (CorePlacer), and only then does a blocked
// ring side wait as the ring does by default: spin, yield its thread
// (sched_yield) for up to 100 µs, then park (ring/wait.go). Otherwise the
// stages share the cores with each other and with the Go runtime's own
// work (garbage collection, a source's parse workers): a yielding thread
// keeps its P and gives its core only to a thread that is runnable right
// then, so a waiting stage would hold, for up to 100 µs each time, the P
// or the core that the stage it waits for needs. Their rings park right
// after the spin instead (run.newRing, ring.SPSC.SetYield(0)).
func spareCore(stages, cores int) bool { return cores > stages }

// jobStages is stageCount for job with the given source workers on a
// machine of the given usable cores.
func jobStages(job *Job, sources, cores int) int {
	channels := 0
	if job.Region != nil {
		channels = job.Region.Channels
	}
	return stageCount(channels, sources, outputStages(job, sources, cores))
}

// JobPlacer is NewCorePlacer for job as Run will run it on this machine.
func JobPlacer(job *Job, log *slog.Logger) *CorePlacer {
	channels := 0
	if job.Region != nil {
		channels = job.Region.Channels
	}
	return NewCorePlacer(channels, SourceWorkers(job), OutputStages(job), log)
}

// OutputStages is how many output stages Run will start for job on this
// machine: the output workers, and the writer when they have one (not a
// parts sink, nor a file written at offsets without checkpoints).
func OutputStages(job *Job) int {
	return outputStages(job, SourceWorkers(job), UsableCores())
}

// outputStages is OutputStages with the given source workers and usable
// cores.
func outputStages(job *Job, sources, cores int) int {
	k := outputWorkers(job, sources, cores)
	if k == 0 {
		return 0
	}
	_, parts := job.Sink.(core.PartSink)
	ps, ok := job.Sink.(core.PositionalSink)
	if parts || (ok && ps.Positional() && job.Checkpoint == nil) {
		return k
	}
	return k + 1
}
