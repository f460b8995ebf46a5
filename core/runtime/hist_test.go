package runtime

import (
	"testing"
	"time"
)

// durationHist: percentiles within its 3 significant digits, every
// recording counted (sub-µs ones as 1 µs), zero when empty.
func TestDurationHist(t *testing.T) {
	var h durationHist
	if p50, p99, pmax := h.percentiles(); p50 != 0 || p99 != 0 || pmax != 0 || h.count() != 0 {
		t.Fatalf("empty: %v %v %v, %d", p50, p99, pmax, h.count())
	}
	for i := 1; i <= 100_000; i++ {
		h.record(time.Duration(i) * time.Microsecond)
	}
	h.record(300 * time.Nanosecond)
	near := func(got, want time.Duration) bool {
		d := got - want
		return d < want/1000+time.Microsecond && -d < want/1000+time.Microsecond
	}
	p50, p99, pmax := h.percentiles()
	if !near(p50, 50*time.Millisecond) || !near(p99, 99*time.Millisecond) || !near(pmax, 100*time.Millisecond) || h.count() != 100_001 {
		t.Fatalf("p50 %v p99 %v max %v count %d", p50, p99, pmax, h.count())
	}
}
