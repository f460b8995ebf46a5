package nexmark

import (
	"context"
	"testing"
	"time"

	"streamd/core"
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
	start := time.Now()
	for n := 0; n < b.N; {
		bt, err := g.Next(ctx)
		if err != nil {
			b.Fatal(err)
		}
		n += bt.Len
		bt.Release()
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkQuery runs each query through core.Run, closed loop (the
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
			start := time.Now()
			if _, err := core.Run(context.Background(), job); err != nil {
				b.Fatal(err)
			}
			el := time.Since(start)
			b.ReportMetric(float64(n)/el.Seconds(), "events/s")
			b.ReportMetric(float64(sink.Records), "out")
		})
	}
}
