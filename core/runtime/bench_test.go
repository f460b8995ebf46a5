package runtime_test

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"streamd/core"
	"streamd/core/runtime"
	"streamd/core/sink"
	"streamd/core/window"
)

// loopSource replays a template of batches n times, copying each into a
// pooled batch and shifting its event times forward, so that windows keep
// firing as in a long-running job.
type loopSource struct {
	tmpl  []*core.Batch
	n, i  int
	shift int64
	span  int64
}

func (s *loopSource) Schema() *core.Schema { return testSchema }
func (s *loopSource) Close() error         { return nil }
func (s *loopSource) Next(context.Context) (*core.Batch, error) {
	if s.i >= s.n {
		return nil, io.EOF
	}
	t := s.tmpl[s.i%len(s.tmpl)]
	if s.i > 0 && s.i%len(s.tmpl) == 0 {
		s.shift += s.span
	}
	s.i++
	b := core.NewBatch(testSchema)
	for r := 0; r < t.Len; r++ {
		row := b.Append(0, 0, core.NoTime, t.Pos[r])
		copy(row, t.Row(r))
		row[2] = core.TimeValue(row[2].Time() + s.shift)
	}
	return b, nil
}

func template(batches, keys int) ([]*core.Batch, int64) {
	recs := genRecords(batches*core.BatchSize, keys, 5)
	for i := range recs { // 10 ms apart: about 30 records per key and window
		recs[i].ts = int64(i) * 10e6
	}
	var out []*core.Batch
	for i := 0; i < len(recs); i += core.BatchSize {
		b := core.NewBatch(testSchema)
		for _, r := range recs[i : i+core.BatchSize] {
			row := b.Append(0, 0, core.NoTime, 1)
			row[0], row[1], row[2] = core.StringValue(r.k), core.IntValue(r.v), core.TimeValue(r.ts)
		}
		out = append(out, b)
	}
	last := recs[len(recs)-1].ts
	return out, (last/60e9 + 1) * 60e9
}

// BenchmarkKeyedRegion runs a whole job — source stage with splitter,
// channels running a 1-minute window aggregate, merger, sink — over b.N
// batches of 512 records. Reported: ns/record and allocations per batch
// (the hot path allocates nothing per record; what remains is per window
// firing and amortised startup).
func BenchmarkKeyedRegion(b *testing.B) {
	tmpl, span := template(64, 200)
	for _, n := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("channels=%d", n), func(b *testing.B) {
			def, err := window.New(window.Spec{Name: "w", Key: []string{"k"}, Size: 60e9, Aggs: []window.Agg{
				{Name: "n", Func: window.Count}, {Name: "s", Func: window.Sum, Field: "v"}, {Name: "m", Func: window.Max, Field: "v"}}}, testSchema)
			if err != nil {
				b.Fatal(err)
			}
			out := &sink.Discard{}
			job := &runtime.Job{Source: &loopSource{tmpl: tmpl, n: b.N, span: span}, EventTime: runtime.EventTime{Field: "ts"},
				Region: &runtime.Region{Channels: n, Key: []string{"k"}, Ops: []core.OperatorDef{def}}, Sink: out}
			b.ReportAllocs()
			b.ResetTimer()
			if _, err := runtime.Run(context.Background(), job); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*core.BatchSize), "ns/record")
		})
	}
}

// BenchmarkWindowProcess is the per-record path of one channel alone: a
// batch of 512 records through the window operator, keys already known.
func BenchmarkWindowProcess(b *testing.B) {
	tmpl, _ := template(1, 200)
	def, err := window.New(window.Spec{Name: "w", Key: []string{"k"}, Size: 3600e9, Aggs: []window.Agg{
		{Name: "n", Func: window.Count}, {Name: "s", Func: window.Sum, Field: "v"}, {Name: "m", Func: window.Max, Field: "v"}}}, testSchema)
	if err != nil {
		b.Fatal(err)
	}
	errs, _ := core.NewErrorPolicy(core.Fail, "")
	op, _ := def.New(core.Env{Channels: 1, Errors: errs})
	out := core.NewEmitter(def.Out, func(x *core.Batch) error { x.Release(); return nil }, nil)
	in := tmpl[0]
	for i := 0; i < in.Len; i++ {
		in.Hash[i] = core.HashKey(in.Row(i), []int{0}, []core.Type{core.String})
		in.Time[i] = in.Row(i)[2].Time()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := op.Process(in, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*in.Len), "ns/record")
}

// BenchmarkDebloat is BenchmarkKeyedRegion on 2 channels with buffer
// debloating off and on (a 1 s target, much longer than the rings take to
// drain here: the limits stay at the ring size, only the slow path
// measures). The pair shows what debloating costs the hot path; the ratio
// is in docs/PERFORMANCE.md.
func BenchmarkDebloat(b *testing.B) {
	tmpl, span := template(64, 200)
	for _, target := range []time.Duration{-1, time.Second} {
		name := "off"
		if target > 0 {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			def, err := window.New(window.Spec{Name: "w", Key: []string{"k"}, Size: 60e9, Aggs: []window.Agg{
				{Name: "n", Func: window.Count}, {Name: "s", Func: window.Sum, Field: "v"}, {Name: "m", Func: window.Max, Field: "v"}}}, testSchema)
			if err != nil {
				b.Fatal(err)
			}
			job := &runtime.Job{Source: &loopSource{tmpl: tmpl, n: b.N, span: span}, EventTime: runtime.EventTime{Field: "ts"},
				Region: &runtime.Region{Channels: 2, Key: []string{"k"}, Ops: []core.OperatorDef{def}}, Sink: &sink.Discard{}, BufferTarget: target}
			b.ReportAllocs()
			b.ResetTimer()
			if _, err := runtime.Run(context.Background(), job); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*core.BatchSize), "ns/record")
		})
	}
}
