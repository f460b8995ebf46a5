package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"streamd/core"
	"streamd/core/runtime"
)

// liveView is what the status line and the metrics endpoint read of a
// running job: runtime.Live, or a scripted stand-in in tests.
type liveView interface {
	Snapshot() *runtime.Report
	Channels() int
	RingLen() []int
}

// latency keeps a sliding window of end-to-end latencies: now − Batch.Stamp
// at the sink, one value per data batch (the batch's oldest record, so the
// figures are upper bounds for the batch). The window is latencyWindows
// slices of latencySlice each. Safe for concurrent use; record costs a lock
// and a histogram increment per batch, on the sink's goroutine.
type latency struct {
	mu      sync.Mutex
	w       *hdrhistogram.WindowedHistogram
	rotated time.Time
}

const (
	latencyWindows = 5
	latencySlice   = time.Second
	latencyMaxUs   = int64(10 * time.Minute / time.Microsecond)
)

func newLatency() *latency {
	return &latency{w: hdrhistogram.NewWindowed(latencyWindows, 1, latencyMaxUs, 2)}
}

// rotate drops slices older than the window; l.mu is held.
func (l *latency) rotate(now time.Time) {
	if l.rotated.IsZero() {
		l.rotated = now
		return
	}
	for i := 0; i < latencyWindows && now.Sub(l.rotated) >= latencySlice; i++ {
		l.w.Rotate()
		l.rotated = l.rotated.Add(latencySlice)
	}
	if now.Sub(l.rotated) >= latencySlice {
		l.rotated = now
	}
}

// observe is a plan.Job.OnSink hook: it borrows b and reads only b.Stamp.
func (l *latency) observe(b *core.Batch) {
	if b.Stamp == 0 {
		return
	}
	now := time.Now()
	us := now.UnixNano()/1000 - b.Stamp/1000
	us = min(max(us, 1), latencyMaxUs)
	l.mu.Lock()
	l.rotate(now)
	l.w.Current.RecordValue(us)
	l.mu.Unlock()
}

// quantiles returns the window's latencies at the given quantiles (in
// percent, e.g. 99) and how many batches the window holds.
func (l *latency) quantiles(now time.Time, qs ...float64) ([]time.Duration, int64) {
	l.mu.Lock()
	l.rotate(now)
	h := l.w.Merge()
	l.mu.Unlock()
	out := make([]time.Duration, len(qs))
	for i, q := range qs {
		out[i] = time.Duration(h.ValueAtQuantile(q)) * time.Microsecond
	}
	return out, h.TotalCount()
}

// status prints a running job's progress to w: one line rewritten in place
// (\r) about 4×/s on a terminal, plain lines every interval otherwise.
type status struct {
	w        io.Writer
	tty      bool
	interval time.Duration
	size     int64 // records the source will produce; 0 = unknown
	base     int64 // records read by the runs before a restore: progress counts them as done
	lat      *latency
	// tick, if set before start, drives the lines instead of a ticker
	// every interval: tests script it.
	tick <-chan time.Time

	prev   sample
	stop   chan struct{}
	done   chan struct{}
	drawn  bool // a terminal line is on screen
	stopMu sync.Once
}

// sample is what a status line is computed from: the counters at one time.
type sample struct {
	wall      time.Duration
	in, out   int64
	blockedNs int64
	channels  int
	p99       time.Duration
	latN      int64
}

func newStatus(w io.Writer, interval time.Duration, size int64, lat *latency) *status {
	tty := isTerminal(w)
	if tty {
		interval = 250 * time.Millisecond
	}
	return &status{w: w, tty: tty, interval: interval, size: size, lat: lat}
}

// isTerminal reports whether w is a character device (a terminal; also
// /dev/null, where what is written does not matter).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// start prints until end is called, reading l.
func (s *status) start(l liveView) {
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	tick, stopTick := s.tick, func() {}
	if tick == nil && s.interval > 0 { // 0 or less: no status lines (tick stays nil)
		t := time.NewTicker(s.interval)
		tick, stopTick = t.C, t.Stop
	}
	go func() {
		defer close(s.done)
		defer stopTick()
		for {
			select {
			case <-s.stop:
				return
			case <-tick:
				s.print(s.take(l, time.Now()))
			}
		}
	}()
}

// end stops the printing and, on a terminal, erases the status line so the
// final report starts on a clean line. Safe to call more than once or
// without start.
func (s *status) end() {
	s.stopMu.Do(func() {
		if s.stop == nil {
			return
		}
		close(s.stop)
		<-s.done
		if s.tty && s.drawn {
			fmt.Fprint(s.w, "\r\x1b[K")
		}
	})
}

func (s *status) take(l liveView, now time.Time) sample {
	r := l.Snapshot()
	sm := sample{wall: r.Wall, in: r.RecordsIn, out: r.RecordsOut, channels: l.Channels()}
	for _, c := range r.Channels {
		sm.blockedNs += c.BlockedNs
	}
	if s.lat != nil {
		q, n := s.lat.quantiles(now, 99)
		sm.p99, sm.latN = q[0], n
	}
	return sm
}

func (s *status) print(cur sample) {
	line := s.line(s.prev, cur)
	s.prev = cur
	if s.tty {
		fmt.Fprint(s.w, "\r"+line+"\x1b[K")
		s.drawn = true
	} else {
		fmt.Fprintln(s.w, line)
	}
}

// line formats one status line from two consecutive samples. Plain lines
// are key=value fields:
//
//	status elapsed=5s in=1000000 out=2000 rate=200000/s channels=2 congestion=0.031 p99=4.1ms progress=50.0% eta=5s
//
// congestion is the fraction of the interval the splitter spent blocked on
// full channel rings (the congestion index, clamped to [0, 1]); p99 is the
// sink latency over the last few seconds ("-" before any batch reached the
// sink); progress and eta appear when the source knows its size.
func (s *status) line(prev, cur sample) string {
	dt := (cur.wall - prev.wall).Seconds()
	var rate, cong float64
	if dt > 0 {
		rate = float64(cur.in-prev.in) / dt
		cong = min(max(float64(cur.blockedNs-prev.blockedNs)/float64(cur.wall-prev.wall), 0), 1)
	}
	p99 := "-"
	if cur.latN > 0 {
		p99 = fmtDur(cur.p99)
	}
	var b strings.Builder
	if s.tty {
		fmt.Fprintf(&b, "%s  %s rec/s  %d ch  congestion %.2f  p99 %s", fmtDur(cur.wall), fmtCount(rate), cur.channels, cong, p99)
	} else {
		fmt.Fprintf(&b, "status elapsed=%s in=%d out=%d rate=%.0f/s channels=%d congestion=%.3f p99=%s",
			fmtDur(cur.wall), cur.in, cur.out, rate, cur.channels, cong, p99)
	}
	if s.size > 0 {
		done := min(s.base+cur.in, s.size)
		frac := float64(done) / float64(s.size)
		eta := "-"
		if rate > 0 {
			eta = fmtDur(time.Duration(float64(s.size-done) / rate * float64(time.Second)))
		}
		if s.tty {
			const width = 20
			n := int(frac * width)
			fmt.Fprintf(&b, "  [%s%s] %3.0f%% ETA %s", strings.Repeat("#", n), strings.Repeat(".", width-n), frac*100, eta)
		} else {
			fmt.Fprintf(&b, " progress=%.1f%% eta=%s", frac*100, eta)
		}
	}
	return b.String()
}

// fmtDur rounds d for a status line: 3 significant figures or so.
func fmtDur(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	default:
		return d.Round(time.Microsecond).String()
	}
}

// fmtCount prints a rate with a k/M/G suffix.
func fmtCount(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.2fG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}
