package main

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"streamd/core"
	"streamd/core/runtime"
)

// TestStatusLine: status lines from scripted samples, plain and terminal.
func TestStatusLine(t *testing.T) {
	prev := sample{wall: 5 * time.Second, in: 1_000_000, out: 10, blockedNs: 1e8, channels: 2}
	cur := sample{wall: 10 * time.Second, in: 2_000_000, out: 20, blockedNs: 6e8, channels: 4, p99: 4100 * time.Microsecond, latN: 3}
	for _, c := range []struct {
		name string
		s    *status
		want string
	}{
		{"plain", &status{},
			"status elapsed=10s in=2000000 out=20 rate=200000/s channels=4 congestion=0.100 p99=4.1ms"},
		{"plain sized", &status{size: 3_000_000},
			"status elapsed=10s in=2000000 out=20 rate=200000/s channels=4 congestion=0.100 p99=4.1ms progress=66.7% eta=5s"},
		{"terminal sized", &status{tty: true, size: 3_000_000},
			"10s  200.0k rec/s  4 ch  congestion 0.10  p99 4.1ms  [#############.......]  67% ETA 5s"},
		// Restored at record 500,000: those count as done.
		{"restored", &status{size: 3_000_000, base: 500_000},
			"status elapsed=10s in=2000000 out=20 rate=200000/s channels=4 congestion=0.100 p99=4.1ms progress=83.3% eta=2.5s"},
	} {
		if got := c.s.line(prev, cur); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
	// No batch at the sink yet, nothing read, and an interval of 0.
	if got := (&status{size: 10}).line(sample{}, sample{}); got != "status elapsed=0s in=0 out=0 rate=0/s channels=0 congestion=0.000 p99=- progress=0.0% eta=-" {
		t.Errorf("empty: %q", got)
	}
}

// syncBuffer is a bytes.Buffer safe for the status goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fakeLive counts up by 1000 records per Snapshot.
type fakeLive struct {
	mu sync.Mutex
	n  int64
}

func (f *fakeLive) Snapshot() *runtime.Report {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n += 1000
	return &runtime.Report{Wall: time.Duration(f.n) * time.Millisecond, RecordsIn: f.n, RecordsOut: f.n / 10,
		Channels: []runtime.ChannelReport{{BlockedNs: f.n * 100_000}}}
}
func (f *fakeLive) Channels() int  { return 1 }
func (f *fakeLive) RingLen() []int { return []int{0} }

var plainLine = regexp.MustCompile(`^status elapsed=\S+ in=\d+ out=\d+ rate=\d+/s channels=1 congestion=0\.100 p99=\S+ progress=\d+\.\d% eta=\S+$`)

// TestStatusPrints: a started status writes a plain line to a non-terminal
// writer at each tick (scripted) until end, and nothing after.
func TestStatusPrints(t *testing.T) {
	var w syncBuffer
	lat := newLatency()
	lat.observe(&core.Batch{Stamp: time.Now().Add(-5 * time.Millisecond).UnixNano()})
	s := newStatus(&w, time.Millisecond, 1_000_000, lat)
	if s.tty {
		t.Fatal("a buffer is not a terminal")
	}
	tick := make(chan time.Time) // unbuffered: a send returns once the tick is taken
	s.tick = tick
	s.start(&fakeLive{})
	for range 3 {
		tick <- time.Now()
	}
	s.end() // the third tick's line is printed before end returns
	s.end()
	out := w.String()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d status lines after 3 ticks:\n%s", len(lines), out)
	}
	for _, l := range lines[1:] { // the first has no previous sample
		if !plainLine.MatchString(l) {
			t.Errorf("line %q does not match %s", l, plainLine)
		}
	}
	select {
	case tick <- time.Now():
		t.Error("status took a tick after end")
	default:
	}
	if w.String() != out {
		t.Error("status printed after end")
	}
}

// TestStatusIntervalNone: --status-interval 0 or less prints no status
// line on a non-terminal (a ticker of period 0 would panic; the flag's
// help says "0 or less: none").
func TestStatusIntervalNone(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		var w syncBuffer
		s := newStatus(&w, d, 1_000_000, newLatency())
		s.start(&fakeLive{})
		s.end()
		if out := w.String(); out != "" {
			t.Errorf("interval %v: printed %q", d, out)
		}
	}
}

// TestLatencyWindow: p99 of the window, and slices leave it after the
// window's length.
func TestLatencyWindow(t *testing.T) {
	l := newLatency()
	now := time.Now()
	l.mu.Lock()
	l.rotate(now)
	for range 100 {
		l.w.Current.RecordValue(5000) // 5 ms in µs
	}
	l.mu.Unlock()
	q, n := l.quantiles(now, 99)
	if n != 100 || q[0] < 4900*time.Microsecond || q[0] > 5100*time.Microsecond {
		t.Errorf("p99 %s of %d, want about 5ms of 100", q[0], n)
	}
	if _, n := l.quantiles(now.Add(latencyWindows*latencySlice+time.Millisecond), 99); n != 0 {
		t.Errorf("%d values left after the window passed", n)
	}
}

// TestRunStatusLines: streamd run prints plain status lines to a
// non-terminal standard error, and none with --quiet. The job's 100,000
// records take tens of milliseconds at least: many 1 ms ticks.
func TestRunStatusLines(t *testing.T) {
	job := quickJob(t, 100_000)
	code, _, stderr := cli(t, "run", job, "--status-interval", "1ms")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "\nstatus elapsed=") || !strings.Contains(stderr, " progress=") || strings.Contains(stderr, "\r") {
		t.Errorf("no plain status lines:\n%s", stderr)
	}
	if !strings.Contains(stderr, "job quickstart: done") {
		t.Errorf("no final report:\n%s", stderr)
	}
	code, _, stderr = cli(t, "run", job, "--status-interval", "1ms", "--quiet")
	if code != 0 || strings.Contains(stderr, "status") {
		t.Errorf("--quiet: exit %d, stderr %q", code, stderr)
	}
}
