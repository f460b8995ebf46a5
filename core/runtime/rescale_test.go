package runtime_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"streamd/core"
	"streamd/core/runtime"
	"streamd/internal/tier"
)

// randomSchedule changes the channel count to a random 1..max every few
// batches, seeded.
func randomSchedule(seed uint64, maxCh int) func(int64) int {
	rnd := rand.New(rand.NewPCG(seed, 99))
	next := int64(1 + rnd.IntN(4))
	return func(b int64) int {
		if b < next {
			return 0
		}
		next = b + 1 + int64(rnd.IntN(4))
		return 1 + rnd.IntN(maxCh)
	}
}

// The determinism contract under live channel changes: a keyed window job
// whose channel count changes at random every few batches produces exactly
// the static run's output. 5 seeds in the fast tier, 20 in the long one.
func TestRescaleKeepsOutput(t *testing.T) {
	recs := genRecords(30000, 300, 11)
	want := expected(recs)
	for seed := uint64(1); seed <= tier.Pick[uint64](5, 20); seed++ {
		sink := &memSink{}
		job, err := windowJob(recs, 1+int(seed%3), sink)
		if err != nil {
			t.Fatal(err)
		}
		job.Region.MaxChannels = 8
		job.Region.Schedule = randomSchedule(seed, 8)
		job.RingSize = 8
		rep, err := runtime.Run(context.Background(), job)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if !slices.Equal(sink.lines, want) {
			t.Fatalf("seed %d: %d rescales; %d lines vs %d: %s", seed, rep.Rescales, len(sink.lines), len(want), diffAt(sink.lines, want))
		}
		if rep.Rescales < 5 {
			t.Fatalf("seed %d: only %d rescales", seed, rep.Rescales)
		}
		var n int64
		for _, c := range rep.Channels {
			n += c.Records
		}
		if n != int64(len(recs)) {
			t.Fatalf("seed %d: channels processed %d records, want %d", seed, n, len(recs))
		}
		if rep.PauseP50 <= 0 || rep.PauseMax < rep.PauseP99 {
			t.Fatalf("seed %d: pause percentiles %v %v %v", seed, rep.PauseP50, rep.PauseP99, rep.PauseMax)
		}
		if rep.DrainP50 <= 0 || rep.DrainMax < rep.DrainP50 {
			t.Fatalf("seed %d: drain wait p50 %v max %v", seed, rep.DrainP50, rep.DrainMax)
		}
	}
}

// A stateless region keeps the input order through channel changes.
func TestRescaleStateless(t *testing.T) {
	recs := genRecords(40000, 5, 2)
	var want []string
	for _, r := range recs {
		if r.v%2 == 0 {
			want = append(want, r.k)
		}
	}
	def := core.OperatorDef{Name: "even", Out: testSchema, New: func(core.Env) (core.Operator, error) { return filterOdd{}, nil }}
	for seed := uint64(1); seed <= 5; seed++ {
		sink := &memSink{}
		job := &runtime.Job{Source: &sliceSource{recs: recs, rnd: rand.New(rand.NewPCG(seed, 2))},
			Region: &runtime.Region{Channels: 2, MaxChannels: 6, Schedule: randomSchedule(seed, 6), Ops: []core.OperatorDef{def}}, Sink: sink, RingSize: 4}
		if _, err := runtime.Run(context.Background(), job); err != nil {
			t.Fatal(err)
		}
		got := make([]string, len(sink.lines))
		for i, l := range sink.lines {
			got[i] = l[:6]
		}
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d: %d records, want %d, or out of order", seed, len(got), len(want))
		}
	}
}
