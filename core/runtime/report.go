package runtime

import (
	"time"

	"streamd/core"
)

// Report is what a finished (or stopped) job says about itself.
type Report struct {
	Job         string
	Wall        time.Duration
	RecordsIn   int64 // records read from the source
	RecordsOut  int64 // records written to the sink
	Operators   []OperatorReport
	Channels    []ChannelReport
	Skipped     int64 // malformed records skipped (on_error: skip)
	DeadLetters int64 // malformed records written to the dead-letter file
	Late        int64 // records that arrived after their windows fired
	PartlyLate  int64 // records that arrived after some of their (sliding) windows fired
	LateFired   int64 // records within allowed lateness that fired their windows again
	Interrupted bool
	// Rescales counts live channel changes; the Pause figures are the
	// pauses channels saw in them (p50, p99, max).
	Rescales                     int64
	PauseP50, PauseP99, PauseMax time.Duration
	// DrainP50 and DrainMax are how long the source waited, before
	// sending the markers, for the old channels to work off their backlog
	// (the channels keep processing; the input stops).
	DrainP50, DrainMax time.Duration
	// Channels now (the live value for a running job).
	CurrentChannels int
	// Reconfigurations counts the reconfigurations carried out, by kind
	// (scale, rebalance, update, checkpoint, stop, pause-controller,
	// resume-controller: control.go), whoever asked; Refused those refused
	// or failed. Nil when there were none.
	Reconfigurations, Refused map[string]int64
	// Rebalance sums up load balancing at the same channel count (nil
	// when the region has none configured). Its steps are not Rescales.
	Rebalance *RebalanceReport
	// Checkpoints completed, their duration (barrier injected → written)
	// and the data-path pause of a channel's snapshot at the barrier.
	// CheckpointsStarted counts the barriers injected (those completed,
	// timed out, failed, and the one in flight).
	CheckpointsStarted           int64
	Checkpoints                  int64
	CheckpointTimeouts           int64
	CheckpointFailures           int64
	CheckpointP50, CheckpointP99 time.Duration
	CheckpointMax                time.Duration
	SnapshotPauseP99             time.Duration
	// CopyOnWriteStalls counts the data-path stalls after a barrier: a
	// channel about to change a key group that the background had not yet
	// serialised serialises it first (core.GroupSnapshot). StallP99 and
	// StallMax are their durations.
	CopyOnWriteStalls  int64
	StallP99, StallMax time.Duration
	// Stages gives each stage's thread CPU time and the part of it spent
	// waiting on rings, in start order (channels that a live change added
	// or removed included). Filled when the job has ended; a live
	// snapshot has zeros.
	Stages []StageCPU
	// ProcessCPU is the CPU time of the whole process during the run (all
	// threads: stages, a source's parse workers, the checkpoint writer,
	// the garbage collector).
	ProcessCPU time.Duration
	// SerialFraction is Amdahl's s: the work (CPU less waiting) of the
	// stages that run once — the single source stage, the merger, the
	// writer — divided by the process's CPU less all waiting. Amdahl's
	// bound on k cores is AmdahlBound(s, k). 0 when not measured.
	SerialFraction float64
}

// OperatorReport gives one operator's record counts, summed over channels.
type OperatorReport struct {
	Name  string
	Stage string // "pre", "region" or "post"
	In    int64
	Out   int64
	Stats map[string]int64
}

// ChannelReport gives one channel's counters.
type ChannelReport struct {
	Records   int64
	BusyNs    int64
	BlockedNs int64 // ns the splitter was blocked on this channel's full ring
	CPUNs     int64 // thread CPU time working, ns (ChannelStats.CPUNs)
	PauseNs   int64 // paused in live reconfigurations, ns (ChannelStats.PauseNs)
}

// Throughput is records read per second of wall time.
func (r *Report) Throughput() float64 {
	if r.Wall <= 0 {
		return 0
	}
	return float64(r.RecordsIn) / r.Wall.Seconds()
}

// Live reads a running job's counters (atomics, updated once per batch):
// for status lines and metrics endpoints. Safe for concurrent use.
type Live struct{ r *run }

// Snapshot returns the job's report as of now.
func (l Live) Snapshot() *Report { return l.r.report(time.Since(l.r.start)) }

// Channels is the region's channel count now (0 without a region).
func (l Live) Channels() int { return int(l.r.curChans.Load()) }

// RingLen returns, for each channel now (index = channel), how many
// batches wait in its input ring.
func (l Live) RingLen() []int {
	l.r.ringsMu.Lock()
	defer l.r.ringsMu.Unlock()
	n := min(int(l.r.curChans.Load()), len(l.r.chanIn))
	// Channel c's input: one ring, or the exchange's M rings together.
	out := make([]int, n)
	for c, rg := range l.r.chanIn[:n] {
		out[c] = rg.Len()
	}
	return out
}

// allSplitters is the single source stage's splitter, or every source
// worker's so far.
func (r *run) allSplitters() []*splitter {
	if r.x != nil {
		return *r.x.splitters.Load()
	}
	return r.splitters
}

// blockedNs is how long the splitter was blocked on channel c's full ring,
// ns; with source workers, the average over their splitters, so that
// blocked time over wall time (the congestion index) stays a fraction.
func (r *run) blockedNs(c int) int64 {
	var ns int64
	sps := r.allSplitters()
	for _, sp := range sps {
		ns += sp.blocked[c].Load()
	}
	return ns / int64(max(1, len(sps)))
}

func (r *run) report(wall time.Duration) *Report {
	pre, region, post := r.preCounters, r.regionCounters, r.postCounters
	rep := &Report{Job: r.job.Name, Wall: wall, RecordsIn: r.recordsIn.Load(), RecordsOut: r.recOut.Load(),
		Skipped: r.job.Errors.Skipped.Load(), DeadLetters: r.job.Errors.DeadLettered.Load() + r.job.Errors.LateDeadLettered.Load(),
		Late: r.job.Errors.Late.Load(), PartlyLate: r.job.Errors.PartlyLate.Load(), LateFired: r.job.Errors.LateFired.Load()}
	add := func(stage string, defs []core.OperatorDef, cs []*core.Counters) {
		for i, d := range defs {
			or := OperatorReport{Name: d.Name, Stage: stage, In: cs[i].In.Load(), Out: cs[i].Out.Load()}
			if d.Stats != nil {
				or.Stats = d.Stats()
			}
			rep.Operators = append(rep.Operators, or)
		}
	}
	add("pre", r.preBuilt, pre)
	if r.job.Region != nil {
		add("region", r.regionDefs, region)
		for c := range int(r.usedChans.Load()) {
			rep.Channels = append(rep.Channels, ChannelReport{Records: r.chanStats[c].Records.Load(),
				BusyNs: r.chanStats[c].BusyNs.Load(), BlockedNs: r.blockedNs(c), CPUNs: r.chanStats[c].CPUNs.Load(),
				PauseNs: r.chanStats[c].PauseNs.Load()})
		}
	}
	add("post", r.job.Post, post)
	rep.Rescales = r.rescales.Load()
	rep.CurrentChannels = int(r.curChans.Load())
	if c := r.ck; c != nil {
		c.mu.Lock()
		rep.Checkpoints, rep.CheckpointTimeouts, rep.CheckpointFailures = c.completed, c.timeouts, c.failures
		c.mu.Unlock()
		rep.CheckpointsStarted = c.started.Load()
		rep.CheckpointP50, rep.CheckpointP99, rep.CheckpointMax = c.durations.percentiles()
		_, rep.SnapshotPauseP99, _ = c.pauses.percentiles()
		rep.CopyOnWriteStalls = c.stalls.count()
		_, rep.StallP99, rep.StallMax = c.stalls.percentiles()
	}
	r.cpuMu.Lock()
	for _, sc := range r.cpus {
		sc.mu.Lock()
		rep.Stages = append(rep.Stages, StageCPU{Stage: sc.stage, Index: sc.index, CPU: sc.cpu, Wait: sc.wait, Records: sc.records.Load(), Replicated: sc.replicated})
		sc.mu.Unlock()
	}
	r.cpuMu.Unlock()
	rep.ProcessCPU = time.Duration(r.procCPU.Load())
	rep.SerialFraction = serialFraction(rep.Stages, rep.ProcessCPU)
	rep.PauseP50, rep.PauseP99, rep.PauseMax = r.pauses.percentiles()
	rep.DrainP50, _, rep.DrainMax = r.drains.percentiles()
	rep.Rebalance = r.rebalanceReport()
	rep.Reconfigurations, rep.Refused = Live{r}.Counts()
	return rep
}
