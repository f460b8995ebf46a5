package runtime

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"streamd/core"
	"streamd/core/source"
	"streamd/elastic"
)

// gate is a region operator that holds the first batch it is given until
// release is closed, then passes every batch on: a channel made slow on
// purpose, so that records pile up in front of it.
type gate struct {
	core.Base
	release <-chan struct{}
	opened  bool
}

func (g *gate) Process(in *core.Batch, out *core.Emitter) error {
	if !g.opened {
		<-g.release
		g.opened = true
	}
	return out.Emit(in)
}

func (*gate) Finish(uint64, *core.Emitter) error { return nil }

// evenSeq is a pre-region filter: it keeps the generator's records with an
// even seq (half of every batch).
type evenSeq struct{ core.Base }

func (evenSeq) Process(in *core.Batch, out *core.Emitter) error {
	j := 0
	for i := 0; i < in.Len; i++ {
		if in.Row(i)[0].Int()%2 == 0 {
			in.Move(j, i)
			j++
		}
	}
	in.Truncate(j)
	return out.Emit(in)
}

func (evenSeq) Finish(uint64, *core.Emitter) error { return nil }

type discardSink struct{}

func (discardSink) Open(*core.Schema) error { return nil }
func (discardSink) Write(*core.Batch) error { return nil }
func (discardSink) Close() error            { return nil }
func (discardSink) Abort()                  {}

// TestRegionLoad: a policy's snapshot carries the records that arrived
// at the splitters (after a pre-region filter that drops half of them, not
// the records read) and the backlog in front of the channel, while the one
// channel holds its first batch: with the single source stage, the batch
// held, the 4 in the full ring and the one the splitter is blocked pushing
// (6 × 256 records); with two source workers, everything routed (two
// generator blocks). Once released and done, the backlog is 0 and every
// routed record was processed. Adaptive batching is off: what fits in the
// ring would depend on when the channel took its first batch (records a
// splitter gathers count as arrived and waiting as soon as they are
// routed, the same as records in a ring).
func TestRegionLoad(t *testing.T) {
	half := int64(core.BatchSize / 2)
	for _, c := range []struct {
		name          string
		workers, ring int
		count         int64
		wait          uint64 // records routed once the splitters are stuck
	}{
		{"source stage", -1, 4, 12 * core.BatchSize, uint64(6 * half)},
		{"source workers", 2, 64, 2 * source.GeneratorBlockRecords, source.GeneratorBlockRecords},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, err := source.Generator(source.GeneratorOptions{Seed: 1, Count: c.count})
			if err != nil {
				t.Fatal(err)
			}
			release := make(chan struct{})
			live := make(chan Live, 1)
			schema := source.GeneratorSchema
			job := &Job{Name: "backlog", Source: src, Sink: discardSink{}, RingSize: c.ring, SourceParallelism: c.workers, BatchLinger: -1,
				Pre: []core.OperatorDef{{Name: "even", Out: schema, New: func(core.Env) (core.Operator, error) { return evenSeq{}, nil }}},
				Region: &Region{Channels: 1, Key: []string{"key"}, Ops: []core.OperatorDef{{Name: "gate", Out: schema,
					New: func(core.Env) (core.Operator, error) { return &gate{release: release}, nil }}}}}
			done := make(chan error, 1)
			go func() {
				_, err := Run(context.Background(), job, OnStart(func(l Live) { live <- l }))
				done <- err
			}()
			r := (<-live).r
			var smp sample
			// Wait (no time limit but the test's) until the splitters can
			// route no more: the channel holds its first batch.
			for {
				if a, _ := r.regionLoad(r.x == nil); a >= c.wait {
					break
				}
				time.Sleep(time.Millisecond)
			}
			got := r.read(&smp, time.Now(), r.x == nil).counters
			if got.Arrived != c.wait || got.Backlog != c.wait || got.Departed != 0 {
				t.Errorf("channel held: arrived %d, backlog %d, departed %d; want %d, %d, 0 (records read: %d)",
					got.Arrived, got.Backlog, got.Departed, c.wait, c.wait, r.recordsIn.Load())
			}
			close(release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			got = r.read(&smp, time.Now(), r.x == nil).counters
			if all := uint64(c.count) / 2; got.Arrived != all || got.Backlog != 0 || got.Departed != all {
				t.Errorf("done: arrived %d, backlog %d, departed %d; want %d, 0, %d (records read: %d)",
					got.Arrived, got.Backlog, got.Departed, all, all, r.recordsIn.Load())
			}
		})
	}
}

// TestTimelineExternalScale: a change of the channel count asked for
// through the control API (Live.Scale) is written into the elastic
// controller's timeline (--elastic-log) as a row of its own: channels
// before, target after, rule ctl:scale, applied.
func TestTimelineExternalScale(t *testing.T) {
	src, err := source.Generator(source.GeneratorOptions{Seed: 1, Count: 12 * core.BatchSize})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	live := make(chan Live, 1)
	var timeline bytes.Buffer
	schema := source.GeneratorSchema
	cfg := elastic.DefaultConfig()
	cfg.PeriodNs, cfg.MaxChannels = int64(time.Hour), 2 // the controller itself decides nothing here
	job := &Job{Name: "external", Source: src, Sink: discardSink{}, RingSize: 4, SourceParallelism: -1,
		Region: &Region{Channels: 1, MaxChannels: 2, Key: []string{"key"}, Elastic: &Elastic{Policy: "levels", Config: cfg}, Timeline: &timeline,
			Ops: []core.OperatorDef{{Name: "gate", Out: schema, New: func(core.Env) (core.Operator, error) { return &gate{release: release}, nil }}}}}
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), job, OnStart(func(l Live) { live <- l }))
		done <- err
	}()
	l := <-live
	scaled := make(chan error, 1)
	go func() {
		_, err := l.Scale(context.Background(), 2, "api", nil)
		scaled <- err
	}()
	// The request is either queued for the source stage (stuck behind the
	// gate) or being carried out by the caller, whose drain waits for the
	// gated channel once channel 1 exists: release the gate then.
	started := func() bool {
		l.r.ringsMu.Lock()
		defer l.r.ringsMu.Unlock()
		return len(l.r.chanIn) > 1
	}
	for l.r.ctl.queued.Load() == 0 && !started() {
		time.Sleep(time.Millisecond)
	}
	close(release)
	if err := <-scaled; err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(timeline.String()), "\n")
	if len(rows) != 2 || !strings.HasPrefix(rows[0], "t_s,channels,congestion,throughput,arrival_rate,level,rule,applied,target,backlog,") {
		t.Fatalf("timeline: want the header and one row, got:\n%s", timeline.String())
	}
	f := strings.Split(rows[1], ",")
	if len(f) != len(timelineHeader) || f[1] != "1" || f[5] != "-1" || f[6] != "ctl:scale" || f[7] != "true" || f[8] != "2" || f[15] != "api" {
		t.Fatalf("timeline row %q: want channels 1, level -1, rule ctl:scale, applied true, target 2, reason api", rows[1])
	}
}
