package runtime

import (
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// durationHist is a bounded record of durations (an HdrHistogram in µs,
// 1 µs to 60 s, 3 significant digits; shorter ones count as 1 µs): pauses
// in reconfigurations, checkpoint durations, snapshot pauses and
// copy-on-write stalls. Recording is O(1) under a mutex of its own, so a
// stage recording on its data path never waits for a report being read,
// and memory does not grow with the run. Safe for concurrent use.
type durationHist struct {
	mu sync.Mutex
	h  *hdrhistogram.Histogram
}

func (p *durationHist) record(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.h == nil {
		p.h = hdrhistogram.New(1, 60_000_000, 3)
	}
	p.h.RecordValue(max(1, d.Microseconds()))
}

// percentiles returns p50, p99 and the maximum (zero when empty).
func (p *durationHist) percentiles() (p50, p99, pmax time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.h == nil {
		return 0, 0, 0
	}
	us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
	return us(p.h.ValueAtQuantile(50)), us(p.h.ValueAtQuantile(99)), us(p.h.Max())
}

// count is how many durations were recorded.
func (p *durationHist) count() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.h == nil {
		return 0
	}
	return p.h.TotalCount()
}
