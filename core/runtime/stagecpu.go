package runtime

import (
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	"streamd/core"
	"streamd/ring"
	"streamd/sched"
)

// stageCPU is one stage's CPU account: the thread CPU time
// (CLOCK_THREAD_CPUTIME_ID) of the OS thread the stage is locked to for its
// whole life, and the part of it spent waiting on rings and doorbells
// (spinning, yielding; a parked thread uses none). The serial fraction
// leaves the waiting out of both sides (docs/ARCHITECTURE.md, "CPU per stage
// and the serial fraction"): otherwise spinning workers would make it look
// small.
//
// Only the stage's goroutine writes it, between begin and end; report
// reads it after end (the run's WaitGroup orders the two) or, for a live
// view, reads whatever end last stored (zero while the stage runs).
//
// The clock is read only on slow paths (a push or pop that could not
// complete at once, a doorbell wait), so the data path pays nothing when
// rings have room.
type stageCPU struct {
	stage      string // "source", "channel", "merger", "output", "writer"
	index      int
	replicated bool // a channel, or one of several source workers

	start time.Duration // thread CPU at begin
	mu    sync.Mutex    // guards cpu and wait for live readers
	cpu   time.Duration // thread CPU from begin to end
	wait  time.Duration // of which waiting
	acc   time.Duration // waiting so far (stage goroutine only)
	// records is what a source stage or worker read (atomic: the live
	// report reads it).
	records atomic.Int64
}

// begin locks the calling goroutine to its thread and starts the account.
func (s *stageCPU) begin() {
	goruntime.LockOSThread()
	s.start = sched.ThreadCPU()
}

// end closes the account and unlocks the thread.
func (s *stageCPU) end() {
	cpu := sched.ThreadCPU() - s.start
	s.mu.Lock()
	s.cpu, s.wait = cpu, s.acc
	s.mu.Unlock()
	goruntime.UnlockOSThread()
}

// work is the stage's thread CPU time since begin less its waiting so far
// (stage goroutine only; one clock read).
func (s *stageCPU) work() time.Duration { return sched.ThreadCPU() - s.start - s.acc }

// waited adds the thread CPU used since t0 (a sched.ThreadCPU reading) to
// the waiting.
func (s *stageCPU) waited(t0 time.Duration) { s.acc += sched.ThreadCPU() - t0 }

// push is rg.Push with the waiting, if any, accounted.
func (s *stageCPU) push(rg *ring.SPSC[*core.Batch], b *core.Batch) (blockedNs int64, err error) {
	if rg.TryPush(b) {
		return 0, nil
	}
	t0 := sched.ThreadCPU()
	blockedNs, err = rg.Push(b)
	s.waited(t0)
	return blockedNs, err
}

// pop is rg.Pop with the waiting, if any, accounted.
func (s *stageCPU) pop(rg *ring.SPSC[*core.Batch]) (*core.Batch, error) {
	if b, ok := rg.TryPop(); ok {
		return b, nil
	}
	t0 := sched.ThreadCPU()
	b, err := rg.Pop()
	s.waited(t0)
	return b, err
}

// StageCPU is one stage's CPU time in a report.
type StageCPU struct {
	Stage string // "source", "channel", "merger", "output" or "writer"
	Index int    // the source worker's, channel's or output worker's index
	// CPU is the thread CPU time of the stage (user + system), Wait the
	// part of it spent waiting on rings (spin and yield; parking costs
	// none). CPU − Wait is the stage's work.
	CPU, Wait time.Duration
	// Records is what a source stage or source worker read (0 for the
	// other stages: see Report.Channels and RecordsOut).
	Records int64
	// Replicated stages (channels, source workers, output workers) scale
	// with their count; the others are the serial part.
	Replicated bool
}

// Work is the stage's CPU time less its waiting.
func (s StageCPU) Work() time.Duration { return s.CPU - s.Wait }

// serialFraction is Amdahl's s for a run: the work of the stages that are
// not replicated divided by all work of the process (its CPU time less
// every stage's waiting). CPU outside the stages (a source's parse workers,
// the checkpoint writer, the garbage collector) counts as parallel work.
// It returns 0 when nothing was measured.
func serialFraction(stages []StageCPU, process time.Duration) float64 {
	var serial, wait time.Duration
	for _, s := range stages {
		wait += s.Wait
		if !s.Replicated {
			serial += s.Work()
		}
	}
	all := process - wait
	if all <= 0 || serial <= 0 {
		return 0
	}
	return min(1, float64(serial)/float64(all))
}

// AmdahlBound is the largest speedup Amdahl's law allows on k cores for
// serial fraction s: 1 / (s + (1−s)/k).
func AmdahlBound(s float64, k int) float64 {
	if k <= 0 {
		return 0
	}
	return 1 / (s + (1-s)/float64(k))
}
