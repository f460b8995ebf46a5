package runtime_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"streamd/core/runtime"
)

// Run calls every OnStart it is given, in order, once, before any record
// reaches the sink; Placement(nil) runs the stages unpinned. Options change
// how a job runs, not its output.
func TestOptions(t *testing.T) {
	recs := genRecords(2000, 10, 5)
	var calls []string
	var outAtStart []int
	sink := &memSink{}
	start := func(name string) runtime.Option {
		return runtime.OnStart(func(runtime.Live) {
			calls = append(calls, name)
			outAtStart = append(outAtStart, len(sink.lines))
		})
	}
	job := &runtime.Job{Source: &sliceSource{recs: recs, rnd: rand.New(rand.NewPCG(1, 2))},
		Region: &runtime.Region{Channels: 2}, Sink: sink}
	rep, err := runtime.Run(context.Background(), job, start("a"), runtime.Placement(nil), start("b"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(calls, []string{"a", "b"}) || !slices.Equal(outAtStart, []int{0, 0}) {
		t.Fatalf("OnStart calls %v with %v lines out", calls, outAtStart)
	}
	if rep.RecordsOut != int64(len(recs)) || len(sink.lines) != len(recs) {
		t.Fatalf("%d records out, %d lines, want %d", rep.RecordsOut, len(sink.lines), len(recs))
	}
}
