package runtime

import (
	goruntime "runtime"
	"sync/atomic"
	"testing"
	"time"

	"streamd/sched"
)

// burn uses about d of the calling thread's CPU.
func burn(d time.Duration) {
	for c0 := sched.ThreadCPU(); sched.ThreadCPU()-c0 < d; {
	}
}

// tick reads the thread clock only once cpuSampleEvery has passed (by the
// monotonic time it is given) since the last reading, each reading
// publishes the work since publishWork, and end publishes the rest: what a
// channel publishes adds up to its stage's work after publishWork.
func TestStageCPUTickSamples(t *testing.T) {
	if sched.ThreadCPU() == 0 {
		t.Skip("no thread clock")
	}
	var published atomic.Int64
	s := &stageCPU{}
	s.begin()
	burn(100 * time.Microsecond)
	s.waited(s.waitBegin()) // before publishWork: not published
	s.publishWork(&published)
	before, t0 := s.published, s.sampled
	if before < 100*time.Microsecond {
		t.Fatalf("work before publishWork %v, want ≥ 100µs", before)
	}
	if p := published.Load(); p != 0 {
		t.Fatalf("published %d ns of the work before publishWork", p)
	}
	burn(100 * time.Microsecond)
	s.tick(t0.Add(cpuSampleEvery - 1))
	if p := published.Load(); p != 0 {
		t.Fatalf("published %d ns before a sampling period passed", p)
	}
	s.tick(t0.Add(cpuSampleEvery))
	p1 := published.Load()
	if p1 < int64(100*time.Microsecond) {
		t.Fatalf("published %d ns after a period, want ≥ 100µs", p1)
	}
	burn(100 * time.Microsecond)
	s.tick(t0.Add(cpuSampleEvery + cpuSampleEvery/2))
	if p := published.Load(); p != p1 {
		t.Fatalf("published %d ns, then %d within the next period", p1, p)
	}
	s.acc += 50 * time.Microsecond // as a wait would: not work
	s.end()
	if p, want := published.Load(), int64(s.cpu-s.wait-before); p != want || p < p1+int64(50*time.Microsecond) {
		t.Fatalf("published %d ns at the end, want %d (stage CPU %v, waiting %v, before publishWork %v)", p, want, s.cpu, s.wait, before)
	}
}

// With the accounts off (the switch that measures what they cost) a stage
// reads no clock and publishes nothing.
func TestStageCPUOff(t *testing.T) {
	stageCPUOff = true
	defer func() { stageCPUOff = false }()
	var published atomic.Int64
	s := &stageCPU{}
	s.begin()
	s.publishWork(&published)
	burn(100 * time.Microsecond)
	s.tick(time.Now().Add(time.Hour))
	s.waited(s.waitBegin())
	s.end()
	if s.cpu != 0 || s.wait != 0 || published.Load() != 0 {
		t.Fatalf("accounts off: cpu %v, wait %v, published %d", s.cpu, s.wait, published.Load())
	}
}

// spin runs n rounds of arithmetic, CPU on whichever thread the goroutine
// is on (no clock read: an unlocked goroutine may change threads).
func spin(n int) uint64 {
	x := uint64(1)
	for i := range n {
		x = x*6364136223846793005 + uint64(i)
	}
	return x
}

var spinSink uint64

// A shared stage (its stages share cores) counts the CPU between
// waitBegin and waited as none — its thread is unlocked there and the
// wait may end on another thread — and everything around the wait by the
// thread clock; a stage with a core of its own counts the wait's CPU as
// waiting. The work inside the wait is several times the work around it,
// so counting it would be plain.
func TestStageCPUSharedSkipsWaits(t *testing.T) {
	// Rounds of spin worth about 40 ms of CPU on this machine, measured
	// on a locked thread.
	goruntime.LockOSThread()
	c0 := sched.ThreadCPU()
	spinSink += spin(1 << 22)
	per := sched.ThreadCPU() - c0
	goruntime.UnlockOSThread()
	rounds := max(1<<20, int(float64(1<<22)*float64(40*time.Millisecond)/float64(max(per, time.Microsecond))))

	for _, shared := range []bool{true, false} {
		s := &stageCPU{stage: "channel", shared: shared}
		s.begin()
		burn(5 * time.Millisecond)
		t0 := s.waitBegin()
		spinSink += spin(rounds) // the "wait": ~40 ms
		s.waited(t0)
		burn(5 * time.Millisecond)
		s.end()
		if shared {
			if s.cpu < 10*time.Millisecond || s.cpu > 25*time.Millisecond || s.wait != 0 {
				t.Errorf("shared: cpu %v wait %v, want the 10 ms around the wait and no waiting", s.cpu, s.wait)
			}
		} else if s.cpu < 40*time.Millisecond || s.wait < 30*time.Millisecond {
			t.Errorf("own core: cpu %v wait %v, want the wait's ~40 ms in both", s.cpu, s.wait)
		}
	}
}
