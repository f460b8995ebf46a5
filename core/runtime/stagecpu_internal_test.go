package runtime

import (
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
