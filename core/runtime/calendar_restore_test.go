package runtime_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"streamd/core"
	"streamd/core/runtime"
	"streamd/core/window"
	"streamd/snapshot"
)

// Calendar windows (7 Paris days sliding by a day, over two weeks that
// hold the autumn clock change) killed and restored from checkpoints four
// times, at 1 to 4 channels, give the output of one uninterrupted run,
// line for line: panes restored from a checkpoint fire at the same
// calendar ends.
func TestCrashRestoreCalendar(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	recs := genRecords(20000, 30, 9)
	base := time.Date(2026, 10, 18, 0, 0, 0, 0, time.UTC).UnixNano()
	for i := range recs {
		recs[i].ts = base + recs[i].ts*40 // about a minute apart: two weeks
	}
	job := func(channels int, sink core.Sink) *runtime.Job {
		def, err := window.New(window.Spec{Name: "week", Key: []string{"k"},
			Calendar: &window.Calendar{Size: window.Week, Slide: window.Day, Loc: paris},
			Aggs:     []window.Agg{{Name: "n", Func: window.Count}, {Name: "s", Func: window.Sum, Field: "v"}}}, testSchema)
		if err != nil {
			t.Fatal(err)
		}
		return &runtime.Job{Name: "test", Source: &sliceSource{recs: recs, rnd: rand.New(rand.NewPCG(7, 7))},
			EventTime: runtime.EventTime{Field: "ts"},
			Region:    &runtime.Region{Channels: channels, Key: []string{"k"}, Ops: []core.OperatorDef{def}},
			Sink:      sink, RingSize: 4}
	}
	ref := &epochMem{}
	if _, err := runtime.Run(context.Background(), job(1, ref)); err != nil {
		t.Fatal(err)
	}
	want := ref.lines()
	if len(want) < 30*15 {
		t.Fatalf("%d rows", len(want))
	}
	rnd := rand.New(rand.NewPCG(4, 4))
	store, err := snapshot.Open(t.TempDir(), 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	sink := &epochMem{}
	var restore *snapshot.Checkpoint
	restores := 0
	for attempt := 0; ; attempt++ {
		j := job(1+rnd.IntN(4), sink)
		j.Checkpoint = &runtime.Checkpointing{Store: store, EveryBatches: 1 + rnd.IntN(5), Restore: restore}
		if attempt < 4 {
			j.Source = &crashAfter{Source: j.Source, n: 5 + rnd.IntN(40)}
		}
		_, err := runtime.Run(context.Background(), j)
		if err == nil {
			break
		}
		if !errors.Is(err, errCrash) {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
		c, _, lerr := store.Latest()
		switch {
		case errors.Is(lerr, snapshot.ErrNoCheckpoint):
			restore, sink.parts = nil, nil
		case lerr != nil:
			t.Fatal(lerr)
		default:
			restore = c
			restores++
		}
	}
	if got := sink.lines(); !slices.Equal(got, want) || restores == 0 {
		t.Fatalf("%d restores; %d lines vs %d: %s", restores, len(got), len(want), diffAt(got, want))
	}
}
