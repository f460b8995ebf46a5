package runtime

import (
	"os"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	"streamd/core"
	"streamd/ring"
	"streamd/sched"
)

// stageCPU is one stage's CPU account: the thread CPU time
// (CLOCK_THREAD_CPUTIME_ID) of the OS thread the stage is locked to while
// it works, and the part of it spent waiting on rings and doorbells
// (spinning, yielding; a parked thread uses none). The serial fraction
// leaves the waiting out of both sides (docs/ARCHITECTURE.md, "CPU per
// stage and the serial fraction"): otherwise spinning workers would make
// it look small.
//
// A stage with a core of its own stays locked to its thread for its whole
// life. A stage that shares cores with others (shared: no core to spare,
// the stages unpinned and the rings parking at once) is locked only while
// it works: it unlocks its thread for every wait that reads the clock and
// locks it again after. A locked goroutine that parks puts its thread to
// sleep and hands its P to another thread, and its wake hands the P back:
// two thread switches a wait, which on 2 cores with 6 stages cost a
// quarter of the wall time. Across such a wait the goroutine may come back
// on another thread, whose clock says nothing of it; the account then
// counts the wait as no CPU (the ring parks at once: its spin is about a
// µs) and carries on from the new thread's clock.
//
// Only the stage's goroutine writes it, between begin and end; report
// reads it after end (the run's WaitGroup orders the two) or, for a live
// view, reads whatever end last stored (zero while the stage runs).
//
// The thread clock is a raw system call (not vDSO: ~0.3–1 µs; sched's
// clock says why raw), so the data path does not read it per batch. It is
// read at begin and end, around a
// push or pop that could not complete at once and other waits, and, for a
// stage that publishes its work (a channel's ChannelStats.CPUNs), at most
// once per cpuSampleEvery of the stage's time in tick. Every reading
// publishes the work so far, so the published figure trails the truth by
// at most cpuSampleEvery of work, and by nothing once the stage waits or
// ends.
type stageCPU struct {
	stage      string // "source", "channel", "merger", "output", "writer"
	index      int
	replicated bool // a channel, or one of several source workers
	// shared says the stage shares cores: its thread is locked only while
	// it works (set before begin, by the run: run.parkSoon).
	shared bool

	// start is the thread CPU at begin, moved on past every wait of a
	// shared stage by the thread clock the wait spanned (waited), so that
	// clock − start is always the stage's CPU so far.
	start time.Duration
	mu    sync.Mutex    // guards cpu and wait for live readers
	cpu   time.Duration // thread CPU from begin to end
	wait  time.Duration // of which waiting
	acc   time.Duration // waiting so far (stage goroutine only)
	// records is what a source stage or worker read (atomic: the live
	// report reads it).
	records atomic.Int64

	// work, once set (publishWork), receives the stage's work in ns
	// (thread CPU less waiting) as the readings find it: a channel's
	// ChannelStats.CPUNs. published is the work up to the last reading
	// (from begin; work has received what came after publishWork);
	// sampled is the monotonic time of the last reading tick made. Stage
	// goroutine only.
	work      *atomic.Int64
	published time.Duration
	sampled   time.Time
}

// cpuSampleEvery is the longest a stage that publishes its work runs on
// between readings of its thread clock (tick): 1 ms, so that at most
// 1,000 readings a second (about 0.05 % of the stage's time) keep the
// published work within 1 ms of the truth, 0.1 % of the elastic
// controller's default 1 s period.
const cpuSampleEvery = time.Millisecond

// stageCPUOff turns the accounts off: no thread clock is read, reports
// show 0 CPU per stage and no serial fraction, and the channels' CPUNs is
// 0 (the elastic controller then uses BusyNs). It exists to measure what
// the accounts cost (STREAMD_STAGE_CPU=off, read once at start;
// docs/PERFORMANCE-LOG.md, "What measuring costs"); nothing else sets it.
var stageCPUOff = os.Getenv("STREAMD_STAGE_CPU") == "off"

// threadCPU is sched.ThreadCPU, or 0 when the accounts are off.
func threadCPU() time.Duration {
	if stageCPUOff {
		return 0
	}
	return sched.ThreadCPU()
}

// begin locks the calling goroutine to its thread and starts the account.
func (s *stageCPU) begin() {
	goruntime.LockOSThread()
	s.start = threadCPU()
}

// end closes the account, publishes the last of the work and unlocks the
// thread.
func (s *stageCPU) end() {
	now := threadCPU()
	cpu := now - s.start
	s.publish(now)
	s.mu.Lock()
	s.cpu, s.wait = cpu, min(s.acc, cpu)
	s.mu.Unlock()
	goruntime.UnlockOSThread()
}

// publishWork starts publishing the stage's work from now on to work (one
// clock reading): a channel's CPUNs counts its work after its restore or
// join. Stage goroutine only.
func (s *stageCPU) publishWork(work *atomic.Int64) {
	if stageCPUOff {
		return
	}
	s.published = sched.ThreadCPU() - s.start - s.acc
	s.sampled = time.Now()
	s.work = work
}

// tick is called by a stage that publishes its work after each data batch,
// with a monotonic time just read (now): it reads the thread clock when
// cpuSampleEvery has passed since the last reading tick made. Stage
// goroutine only; allocates nothing.
func (s *stageCPU) tick(now time.Time) {
	if now.Sub(s.sampled) < cpuSampleEvery || stageCPUOff {
		return
	}
	s.sampled = now
	s.publish(sched.ThreadCPU())
}

// publish adds the work up to thread CPU reading c to s.work, if any.
func (s *stageCPU) publish(c time.Duration) {
	if s.work == nil || stageCPUOff {
		return
	}
	if w := c - s.start - s.acc; w > s.published {
		s.work.Add(int64(w - s.published))
		s.published = w
	}
}

// waitBegin is a thread clock reading before a wait (which publishes the
// work up to it); waited, with it, accounts the wait. A shared stage's
// thread is unlocked from waitBegin to waited: the two always come in
// pairs, on the stage's goroutine.
func (s *stageCPU) waitBegin() time.Duration {
	c := threadCPU()
	s.publish(c)
	if s.shared {
		goruntime.UnlockOSThread()
	}
	return c
}

// waited adds the thread CPU used since t0 (a waitBegin reading) to the
// waiting; for a shared stage it locks the thread again and counts the
// wait as no CPU, whichever thread it comes back on.
func (s *stageCPU) waited(t0 time.Duration) {
	if s.shared {
		goruntime.LockOSThread()
		s.start += threadCPU() - t0
		return
	}
	s.acc += threadCPU() - t0
}

// push is rg.Push with the waiting, if any, accounted.
func (s *stageCPU) push(rg *ring.SPSC[*core.Batch], b *core.Batch) (blockedNs int64, err error) {
	return pushWaiting(s, rg, b)
}

// pop is rg.Pop with the waiting, if any, accounted.
func (s *stageCPU) pop(rg *ring.SPSC[*core.Batch]) (*core.Batch, error) {
	return popWaiting(s, rg)
}

// pushWaiting is rg.Push with the waiting, if any, accounted in s.
func pushWaiting[T any](s *stageCPU, rg *ring.SPSC[T], v T) (blockedNs int64, err error) {
	if rg.TryPush(v) {
		return 0, nil
	}
	t0 := s.waitBegin()
	blockedNs, err = rg.Push(v)
	s.waited(t0)
	return blockedNs, err
}

// popWaiting is rg.Pop with the waiting, if any, accounted in s.
func popWaiting[T any](s *stageCPU, rg *ring.SPSC[T]) (T, error) {
	if v, ok := rg.TryPop(); ok {
		return v, nil
	}
	t0 := s.waitBegin()
	v, err := rg.Pop()
	s.waited(t0)
	return v, err
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
