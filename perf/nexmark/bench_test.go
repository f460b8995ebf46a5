package nexmark

import (
	"context"
	"syscall"
	"testing"
	"time"

	"streamd/core"
	"streamd/core/runtime"
)

// BenchmarkGenerator: one op = one event generated through Next (batches
// released, as a sink would), flat out. Reports events/s; 0 allocs/op.
func BenchmarkGenerator(b *testing.B) {
	g, err := NewGenerator(Config{Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu := time.Now(), cpuTime()
	for n := 0; n < b.N; {
		bt, err := g.Next(ctx)
		if err != nil {
			b.Fatal(err)
		}
		n += bt.Len
		bt.Release()
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
	b.ReportMetric(float64(b.N)/(cpuTime()-cpu).Seconds(), "events/cpu-s")
}

// cpuTime is the process's user + system CPU time: events per CPU second
// is the per-core throughput, whatever else shares the machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkQuery runs each query through runtime.Run, closed loop (the
// generator flat out, inside the measured process), over b.N events
// (at least 64 batches); regional queries with 1 channel. One op = one
// event; events/s is b.N over the run's wall time.
func BenchmarkQuery(b *testing.B) {
	for _, q := range Queries {
		b.Run(q.Name[len("nexmark-"):], func(b *testing.B) {
			n := max(int64(b.N), 64*core.BatchSize)
			g, err := NewGenerator(Config{Seed: 1, Count: n})
			if err != nil {
				b.Fatal(err)
			}
			sink := &Discard{}
			job, err := q.Build(g, 1, sink)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			start, cpu := time.Now(), cpuTime()
			if _, err := runtime.Run(context.Background(), job); err != nil {
				b.Fatal(err)
			}
			el, used := time.Since(start), cpuTime()-cpu
			b.ReportMetric(float64(n)/el.Seconds(), "events/s")
			b.ReportMetric(float64(n)/used.Seconds(), "events/cpu-s")
			b.ReportMetric(float64(sink.Records), "out")
		})
	}
}
