package nexmark

import (
	"context"
	"testing"
	"time"

	"streamd/core/plan"
	"streamd/core/runtime"
	"streamd/kvstate/balance"
)

// BenchmarkQ5Rebalance runs q5 (hot auctions) with 2 channels, closed
// loop, over max(b.N, 4 M) events, with the loads only counted (count:
// target skew 100, so never a plan) and with rebalancing on (auto, period
// 200 ms). It reports events/s, the channels' load skew (max records /
// mean) over the whole run (skew_run), in the period before the first
// plan (skew_before: 0 without a plan) and in the last period measured
// (skew_last), the steps, and the step pause p99 in µs. For A B A B
// comparisons run the sub-benchmarks alternately from one test binary
// (scripts/bench.sh rebalance q5).
func BenchmarkQ5Rebalance(b *testing.B) {
	for _, mode := range []string{"count", "auto"} {
		b.Run(mode, func(b *testing.B) {
			n := max(int64(b.N), 4_000_000)
			g, err := NewGenerator(Config{Seed: 1, Count: n})
			if err != nil {
				b.Fatal(err)
			}
			job, err := buildQ5(g, 2, &Discard{})
			if err != nil {
				b.Fatal(err)
			}
			if mode == "auto" {
				job.Region.Rebalance = &plan.Rebalance{Auto: true, Period: 200 * time.Millisecond}
			} else {
				// Counted, never planned: the same loads measured.
				job.Region.Rebalance = &plan.Rebalance{Auto: true, Period: 200 * time.Millisecond, TargetSkew: 100}
			}
			b.ResetTimer()
			start := time.Now()
			rep, err := runtime.Run(context.Background(), job)
			if err != nil {
				b.Fatal(err)
			}
			el := time.Since(start)
			per := make([]uint64, len(rep.Channels))
			for c, ch := range rep.Channels {
				per[c] = uint64(ch.Records)
			}
			rb := rep.Rebalance
			before := 0.0
			if rb.First != nil {
				before = rb.First.Before
			}
			b.ReportMetric(float64(n)/el.Seconds(), "events/s")
			b.ReportMetric(balance.Skew(per), "skew_run")
			b.ReportMetric(before, "skew_before")
			b.ReportMetric(rb.LatestSkew, "skew_last")
			b.ReportMetric(float64(rb.Steps), "steps")
			b.ReportMetric(float64(rb.PauseP99.Microseconds()), "pause_p99_µs")
		})
	}
}
