package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"streamd/core"
	"streamd/core/runtime"
	"streamd/internal/tier"
)

// endSignal wraps a source and closes ended when its Next returns io.EOF.
type endSignal struct {
	core.Source
	ended chan struct{}
}

func (s *endSignal) Next(ctx context.Context) (*core.Batch, error) {
	b, err := s.Source.Next(ctx)
	if errors.Is(err, io.EOF) {
		select {
		case <-s.ended:
		default:
			close(s.ended)
		}
	}
	return b, err
}

// holdUntil is a region operator that holds its first data batch until
// open is closed: a channel kept busy, so that the splitter gathers.
type holdUntil struct {
	core.Base
	open   <-chan struct{}
	opened bool
}

func (h *holdUntil) Process(in *core.Batch, out *core.Emitter) error {
	if !h.opened {
		<-h.open
		h.opened = true
	}
	return out.Emit(in)
}

func (*holdUntil) Finish(uint64, *core.Emitter) error { return nil }

// Adaptive batching changes how records cross the rings, never the output:
// a keyed sliding window over out-of-order input (late records dead-
// lettered by the channels) gives the same output lines, dead-letter file
// and counts with batching on and off, for 1, 2 and 3 channels, with the
// single source stage and with 1 and 2 source workers (which gather only
// with a linger set: 1 h here); linger -1 is off, 0 the default (1 ms),
// 1 h never lingers.
// In the single-stage runs with batching on, each channel holds
// its first batch until the source has read everything, so that the
// splitter gathers for certain: the run must then have used fewer ring
// slots than pieces (asserted), and the channels split the gathered
// batches back.
func TestBatchingKeepsOutput(t *testing.T) {
	recs := outOfOrder(tier.Pick(20_000, 30_000), 300, 11)
	type result struct {
		lines   []string
		letters string
		late    int64
		out     int64
	}
	run := func(m, n int, linger time.Duration, hold bool) result {
		name := fmt.Sprintf("%d workers, %d channels, linger %s, hold %v", m, n, linger, hold)
		dl := filepath.Join(t.TempDir(), "dead.jsonl")
		src := newBlockSource(recs, 5)
		job, sink := exchangeJob(t, src, m, n, 60e9, 20e9, dl)
		job.BatchLinger = linger
		var live runtime.Live
		onStart := runtime.OnStart(func(l runtime.Live) { live = l })
		if hold {
			ended := make(chan struct{})
			job.Source = &endSignal{Source: src, ended: ended}
			job.RingSize = 1024 // everything fits while the channels hold
			h := core.OperatorDef{Name: "hold", Out: testSchema, New: func(core.Env) (core.Operator, error) {
				return &holdUntil{open: ended}, nil
			}}
			job.Region.Ops = append([]core.OperatorDef{h}, job.Region.Ops...)
		}
		rep, err := runtime.Run(context.Background(), job, onStart)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		letters, err := os.ReadFile(dl)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if hold && linger > 0 {
			pieces, slots := runtime.SplitterSlots(live)
			for c := range pieces {
				if slots[c]*2 > pieces[c] {
					t.Errorf("%s: channel %d got %d pieces in %d ring slots: nothing gathered", name, c, pieces[c], slots[c])
				}
			}
		}
		return result{sink.lines, string(letters), rep.Late, rep.RecordsOut}
	}
	want := run(-1, 1, -1, false)
	if want.late == 0 || want.letters == "" || len(want.lines) == 0 {
		t.Fatalf("reference: %d late, %d bytes of dead letters, %d lines", want.late, len(want.letters), len(want.lines))
	}
	// The fast tier runs a corner of the grid, the long one all of it.
	ms, ns, lingers := []int{-1, 2}, []int{1, 3}, []time.Duration{-1, time.Hour}
	if tier.Long() {
		ms, ns, lingers = []int{-1, 1, 2}, []int{1, 2, 3}, []time.Duration{-1, 0, time.Hour}
	}
	for _, m := range ms {
		for _, n := range ns {
			for _, linger := range lingers {
				for _, hold := range []bool{false, true} {
					if hold && m > 0 {
						continue // source workers read blocks, not Next: nothing to hold for
					}
					if m > 0 && !tier.Long() && (n == 1 || linger < 0) {
						continue // one run of gathering source workers in the fast tier
					}
					got := run(m, n, linger, hold)
					name := fmt.Sprintf("%d workers, %d channels, linger %s, hold %v", m, n, linger, hold)
					if !slices.Equal(got.lines, want.lines) {
						t.Fatalf("%s: output differs: %s", name, diffAt(got.lines, want.lines))
					}
					if got.letters != want.letters || got.late != want.late || got.out != want.out {
						t.Fatalf("%s: dead letters differ (%d vs %d bytes), %d late (want %d), %d out (want %d)",
							name, len(got.letters), len(want.letters), got.late, want.late, got.out, want.out)
					}
				}
			}
		}
	}
}
