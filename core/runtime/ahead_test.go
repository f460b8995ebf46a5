package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"streamd/core"
	"streamd/core/runtime"
	"streamd/snapshot"
)

// aheadSource is a block source of out-of-order records in which the
// second record of every seventh batch (of three records or more) is a day
// ahead; it returns the source and the number of such records.
func aheadSource(seed uint64) (*blockSource, int) {
	recs := outOfOrder(30_000, 200, 6)
	src := newBlockSource(recs, seed)
	n := 0
	for i := 0; i+1 < len(src.cuts); i++ {
		if i%7 == 3 && src.cuts[i+1]-src.cuts[i] >= 3 {
			recs[src.cuts[i]+1].ts += 86_400e9
			n++
		}
	}
	return src, n
}

// event_time.max_ahead with source workers, crashes and restores: the
// records a day ahead are skipped, every one (counted exactly), and the
// others keep their windows: the output of the single source stage, for
// any source parallelism and channel count, and after three crashes each
// restored with another parallelism and channel count. Without max_ahead
// the same input loses most windows to lateness (the control).
func TestMaxAheadCrashRestore(t *testing.T) {
	src, outliers := aheadSource(1)
	ref, refSink := exchangeJob(t, src, -1, 1, 60e9, 0, "")
	ref.EventTime.MaxAhead = 3600e9
	rep, err := runtime.Run(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	want := refSink.lines
	if rep.Skipped != int64(outliers) || outliers < 10 || rep.RecordsIn != 30_000-int64(outliers) {
		t.Fatalf("single source stage: %d skipped, %d records in; want the %d records a day ahead skipped", rep.Skipped, rep.RecordsIn, outliers)
	}
	control, controlSink := exchangeJob(t, func() *blockSource { s, _ := aheadSource(1); return s }(), -1, 1, 60e9, 0, "")
	crep, err := runtime.Run(context.Background(), control)
	if err != nil {
		t.Fatal(err)
	}
	if crep.Late < 10*rep.Late+1000 || len(controlSink.lines) >= len(want) {
		t.Fatalf("without max_ahead: %d late (%d with it), %d windows (%d with it): the outliers should make most records late", crep.Late, rep.Late, len(controlSink.lines), len(want))
	}
	for _, mn := range [][2]int{{1, 1}, {2, 3}, {3, 2}, {8, 1}} {
		s, _ := aheadSource(1)
		job, sink := exchangeJob(t, s, mn[0], mn[1], 60e9, 0, "")
		job.EventTime.MaxAhead = 3600e9
		r, err := runtime.Run(context.Background(), job)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(sink.lines, want) || r.Skipped != rep.Skipped || r.Late != rep.Late {
			t.Fatalf("%d workers, %d channels: %d skipped, %d late (single stage %d, %d): %s", mn[0], mn[1], r.Skipped, r.Late, rep.Skipped, rep.Late, diffAt(sink.lines, want))
		}
	}
	rnd := rand.New(rand.NewPCG(3, 41))
	store, err := snapshot.Open(t.TempDir(), 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	sink := &epochMem{}
	var restore *snapshot.Checkpoint
	crashes, restores := 0, 0
	for attempt := 0; ; attempt++ {
		s, _ := aheadSource(1)
		var src core.Source = s
		start := 0 // the block a restore resumes at
		if restore != nil {
			start = int(restore.Meta.Sources["block"])
		}
		if attempt < 3 && start+2 < s.Blocks() {
			src = &crashBlocks{blockSource: s, crashAt: start + 2 + rnd.IntN(s.Blocks()-start-2)}
		}
		job, _ := exchangeJob(t, src, 1+rnd.IntN(4), 1+rnd.IntN(4), 60e9, 0, "")
		job.EventTime.MaxAhead = 3600e9
		job.Sink = sink
		job.Checkpoint = &runtime.Checkpointing{Store: store, EveryBatches: 1 + rnd.IntN(3), Restore: restore}
		_, err := runtime.Run(context.Background(), job)
		if err == nil {
			break
		}
		if !errors.Is(err, errCrash) {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
		crashes++
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
	if got := sink.lines(); !slices.Equal(got, want) || crashes < 2 || restores == 0 {
		t.Fatalf("%d crashes, %d restores; %d lines vs %d: %s", crashes, restores, len(got), len(want), diffAt(got, want))
	}
}

// A live input (not splittable: batches follow the clock) measures
// max_ahead from processing time: a record a day ahead of now is skipped,
// one half an hour ahead is kept, and so are records in the past however
// far apart. No timing matters: the margins are hours.
func TestMaxAheadLiveInput(t *testing.T) {
	now := time.Now().UnixNano()
	var recs []rec
	for i := range 2000 {
		recs = append(recs, rec{k: fmt.Sprintf("k%d", i%5), v: 1, ts: now - 30*86_400e9 + int64(i)*1e9})
	}
	recs[700].ts = now + 86_400e9      // a day ahead: skipped
	recs[900].ts = now + 1_800e9       // half an hour ahead: kept
	recs[1100].ts = now - 400*86_400e9 // far behind: kept (and late)
	job, _ := exchangeJob(t, &sliceSource{recs: recs, rnd: rand.New(rand.NewPCG(1, 2))}, -1, 2, 60e9, 0, "")
	job.EventTime.MaxAhead = 3600e9
	rep, err := runtime.Run(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Skipped != 1 || rep.RecordsIn != 1999 {
		t.Fatalf("%d skipped, %d records in; want the one record a day ahead skipped", rep.Skipped, rep.RecordsIn)
	}
}
