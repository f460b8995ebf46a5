package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"streamd/core"
	"streamd/core/runtime"
)

// lifecycle counts what the runtime does with the instances of one
// operator: how many it opened and closed, and any instance it used after
// closing or closed twice.
type lifecycle struct {
	opened, closed atomic.Int64
	mu             sync.Mutex
	bad            []string
}

func (l *lifecycle) wrong(format string, args ...any) {
	l.mu.Lock()
	l.bad = append(l.bad, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

// check fails the test unless every opened instance was closed exactly
// once and none was used after its close.
func (l *lifecycle) check(t *testing.T, name string) {
	t.Helper()
	if o, c := l.opened.Load(), l.closed.Load(); o == 0 || o != c {
		t.Errorf("%s: %d instances opened, %d closed", name, o, c)
	}
	for _, b := range l.bad {
		t.Errorf("%s: %s", name, b)
	}
}

// probe is a pass-through operator that reports its lifecycle. A hook runs
// in New for instances of channels a live change adds (Env.Rescaled), and
// fail, if set, fails the first batch such an instance processes.
type probe struct {
	core.Base
	l       *lifecycle
	env     core.Env
	closed  bool
	fail    bool
	batches int
}

func probeDef(l *lifecycle, in *core.Schema, onAdd func() error, failAdded bool) core.OperatorDef {
	return core.OperatorDef{Name: "probe", Out: in, New: func(env core.Env) (core.Operator, error) {
		if env.Rescaled && onAdd != nil {
			if err := onAdd(); err != nil {
				return nil, err
			}
		}
		l.opened.Add(1)
		return &probe{l: l, env: env, fail: failAdded && env.Rescaled}, nil
	}}
}

func (p *probe) Process(in *core.Batch, out *core.Emitter) error {
	if p.closed {
		p.l.wrong("channel %d: Process after Close", p.env.Channel)
	}
	p.batches++
	if p.fail {
		return errors.New("added channel fails")
	}
	return out.Emit(in)
}

func (p *probe) Close() error {
	if p.closed {
		p.l.wrong("channel %d: closed twice", p.env.Channel)
	}
	p.closed = true
	p.l.closed.Add(1)
	return nil
}

// Teardown during a live change that adds channels: a cancel (Ctrl-C)
// while the new channels are being made, an error making them, or a new
// channel failing on its first batch. For a stateless and a keyed region,
// Run returns the error, every instance is closed exactly once, and no
// goroutine is left (TestMain's goleak). With the single source stage,
// with 3 source workers, and with workers traded for channels (-1: 6
// source cores, so the change to 4 channels also retires workers).
func TestTeardownDuringChannelChange(t *testing.T) {
	recs := genRecords(50_000, 200, 5)
	for _, workers := range []int{0, 3, -1} {
		for _, keyed := range []bool{false, true} {
			for _, how := range []string{"cancel", "new fails", "process fails"} {
				name := fmt.Sprintf("%d source workers, keyed %v, %s", workers, keyed, how)
				ctx, cancel := context.WithCancel(context.Background())
				l := &lifecycle{}
				var onAdd func() error
				switch how {
				case "cancel":
					onAdd = func() error { cancel(); return nil }
				case "new fails":
					onAdd = func() error { return errors.New("no room for a channel") }
				}
				sink := &memSink{}
				reg := &runtime.Region{Channels: 1, MaxChannels: 4, Ops: []core.OperatorDef{probeDef(l, testSchema, onAdd, how == "process fails")},
					Schedule: func(b int64) int {
						if b == 3 {
							return 4
						}
						return 0
					}}
				if keyed {
					reg.Key = []string{"k"}
				}
				job := &runtime.Job{Name: "teardown", Source: &sliceSource{recs: recs, rnd: rand.New(rand.NewPCG(5, 5))}, Region: reg, Sink: sink, RingSize: 4}
				if workers > 0 {
					job.Source, job.SourceParallelism = newBlockSource(recs, 5), workers
				}
				_, err := runtime.Run(ctx, job)
				cancel()
				switch {
				case err == nil:
					t.Errorf("%s: the job succeeded", name)
				case how == "cancel" && !errors.Is(err, runtime.ErrInterrupted):
					t.Errorf("%s: %v, want interrupted", name, err)
				}
				if !sink.aborted || sink.closed {
					t.Errorf("%s: sink aborted %v, closed %v", name, sink.aborted, sink.closed)
				}
				l.check(t, name)
			}
		}
	}
}

// Every instance is closed exactly once on success too, including those of
// channels that live changes added and removed.
func TestOperatorsClosedOnceWithChanges(t *testing.T) {
	for _, workers := range []int{0, 3, -1} {
		closedOnceWithChanges(t, workers)
	}
}

func closedOnceWithChanges(t *testing.T, workers int) {
	recs := genRecords(30_000, 200, 9)
	l := &lifecycle{}
	sink := &memSink{}
	job := &runtime.Job{Name: "close", Source: &sliceSource{recs: recs, rnd: rand.New(rand.NewPCG(9, 9))}, Sink: sink, RingSize: 8,
		Region: &runtime.Region{Channels: 2, MaxChannels: 6, Key: []string{"k"}, Ops: []core.OperatorDef{probeDef(l, testSchema, nil, false)},
			Schedule: randomSchedule(3, 6)}}
	switch {
	case workers > 0:
		job.Source, job.SourceParallelism = newBlockSource(recs, 9), workers
	case workers < 0: // workers traded for channels
		job.Source, job.SourceCores = newBlockSource(recs, 9), 7
	}
	rep, err := runtime.Run(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rescales < 3 {
		t.Fatalf("only %d live changes", rep.Rescales)
	}
	if len(sink.lines) != len(recs) || !sink.closed {
		t.Fatalf("%d lines of %d, sink closed %v", len(sink.lines), len(recs), sink.closed)
	}
	l.check(t, "changes")
	if l.opened.Load() <= 2 {
		t.Fatalf("only %d instances opened: no channel was added", l.opened.Load())
	}
}

// rejectOp fails (through the error policy, under on_error: fail) on every
// record whose v is bad; on records of key slow it first waits a little,
// so that the channel holding the input's first bad record is the last to
// reach it. The delay only makes the old race likely; the tests'
// assertions hold at any timing.
type rejectOp struct {
	core.Base
	env  core.Env
	bad  int64
	slow string
}

func (o *rejectOp) Process(in *core.Batch, out *core.Emitter) error {
	for i := 0; i < in.Len; i++ {
		row := in.Row(i)
		if row[0].Str() == o.slow {
			time.Sleep(50 * time.Microsecond)
		}
		if row[1].Int() == o.bad {
			if err := o.env.Errors.Bad("reject", in.Pos[i], row[0].Str(), errors.New("bad value")); err != nil {
				return err
			}
		}
	}
	return out.Emit(in)
}

// Under on_error: fail an operator in a channel fails the job with the
// first bad record in input order, as one channel does, whatever the
// channel count, source parallelism and timing; every stage returns
// (goleak) and the sink is aborted.
func TestChannelFailNamesFirstBadRecord(t *testing.T) {
	recs := genRecords(60_000, 50, 17)
	first := -1
	for i, r := range recs {
		if r.v == 7 {
			first = i
			break
		}
	}
	if first < 0 {
		t.Fatal("no bad record in the input")
	}
	want := fmt.Sprintf("reject:%d: bad value", first+1)
	run := func(m, n int) error {
		errs, err := core.NewErrorPolicy(core.Fail, "")
		if err != nil {
			t.Fatal(err)
		}
		def := core.OperatorDef{Name: "reject", Out: testSchema, New: func(env core.Env) (core.Operator, error) {
			return &rejectOp{env: env, bad: 7, slow: recs[first].k}, nil
		}}
		sink := &memSink{}
		job := &runtime.Job{Name: "reject", Source: newBlockSource(recs, 3), SourceParallelism: m, Errors: errs, RingSize: 4, Sink: sink,
			Region: &runtime.Region{Channels: n, Key: []string{"k"}, Ops: []core.OperatorDef{def}}}
		_, err = runtime.Run(context.Background(), job)
		if !sink.aborted || sink.closed {
			t.Errorf("%d workers, %d channels: sink aborted %v, closed %v", m, n, sink.aborted, sink.closed)
		}
		return err
	}
	for _, mn := range [][2]int{{-1, 1}, {1, 1}, {2, 2}, {3, 3}, {1, 8}, {8, 4}} {
		if err := run(mn[0], mn[1]); err == nil || err.Error() != want {
			t.Fatalf("%d workers, %d channels: %v, want %s", mn[0], mn[1], err, want)
		}
	}
}

// A malformed input record (met by a source worker or the single source
// stage) and a bad record met by an operator in a channel: whichever comes
// first in the input names the job's error, with any number of workers
// and channels.
func TestSourceAndChannelFailuresInInputOrder(t *testing.T) {
	recs := genRecords(60_000, 50, 17)
	first := slices.IndexFunc(recs, func(r rec) bool { return r.v == 7 })
	if first < 0 || first < 100 {
		t.Fatalf("first bad value at %d", first)
	}
	for _, c := range []struct {
		name  string
		every int
		want  string
	}{
		{"channel first", first + 300, fmt.Sprintf("reject:%d: bad value", first+1)},
		{"source first", first / 2, fmt.Sprintf("blocks:%d: malformed on purpose", first/2)},
	} {
		for _, mn := range [][2]int{{-1, 1}, {-1, 3}, {1, 2}, {3, 3}, {8, 2}} {
			errs, err := core.NewErrorPolicy(core.Fail, "")
			if err != nil {
				t.Fatal(err)
			}
			def := core.OperatorDef{Name: "reject", Out: testSchema, New: func(env core.Env) (core.Operator, error) {
				return &rejectOp{env: env, bad: 7, slow: recs[first].k}, nil
			}}
			src := newBlockSource(recs, 3)
			src.every, src.errs = c.every, errs
			var in core.Source = src
			if mn[0] < 0 { // the single source stage
				in = &nextOnly{src}
			}
			job := &runtime.Job{Name: "mixed", Source: in, SourceParallelism: mn[0], Errors: errs, RingSize: 64, Sink: &memSink{},
				Region: &runtime.Region{Channels: mn[1], Key: []string{"k"}, Ops: []core.OperatorDef{def}}}
			if _, err := runtime.Run(context.Background(), job); err == nil || err.Error() != c.want {
				t.Fatalf("%s, %d workers, %d channels: %v, want %s", c.name, mn[0], mn[1], err, c.want)
			}
		}
	}
}

// nextOnly hides a source's blocks: it is read by the single source stage.
type nextOnly struct{ core.Source }
