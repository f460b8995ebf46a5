package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"streamd/core"
	"streamd/core/runtime"
	"streamd/core/window"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var testSchema = core.MustSchema(
	core.Field{Name: "k", Type: core.String},
	core.Field{Name: "v", Type: core.Int64},
	core.Field{Name: "ts", Type: core.Timestamp},
)

type rec struct {
	k  string
	v  int64
	ts int64
}

// sliceSource hands out records in batches of random sizes.
type sliceSource struct {
	recs []rec
	i    int
	rnd  *rand.Rand
	fail error // returned once the records run out, instead of io.EOF
}

func (s *sliceSource) Schema() *core.Schema { return testSchema }
func (s *sliceSource) Close() error         { return nil }
func (s *sliceSource) Next(ctx context.Context) (*core.Batch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.i >= len(s.recs) {
		if s.fail != nil {
			return nil, s.fail
		}
		return nil, io.EOF
	}
	b := core.NewBatch(testSchema)
	n := 1 + s.rnd.IntN(core.BatchSize)
	for ; n > 0 && s.i < len(s.recs); n-- {
		r := s.recs[s.i]
		s.i++
		row := b.Append(0, 0, core.NoTime, int64(s.i))
		row[0], row[1], row[2] = core.StringValue(r.k), core.IntValue(r.v), core.TimeValue(r.ts)
	}
	return b, nil
}

// memSink renders every record as a line.
type memSink struct {
	schema  *core.Schema
	lines   []string
	closed  bool
	aborted bool
}

func (m *memSink) Open(s *core.Schema) error { m.schema = s; return nil }
func (m *memSink) Write(b *core.Batch) error {
	var buf []byte
	for i := 0; i < b.Len; i++ {
		buf = buf[:0]
		for j, f := range m.schema.Fields {
			if j > 0 {
				buf = append(buf, ',')
			}
			buf = core.AppendText(buf, f.Type, b.Row(i)[j])
		}
		m.lines = append(m.lines, string(buf))
	}
	return nil
}
func (m *memSink) Close() error { m.closed = true; return nil }
func (m *memSink) Abort()       { m.aborted = true }

func genRecords(n, keys int, seed uint64) []rec {
	rnd := rand.New(rand.NewPCG(seed, 1))
	rs := make([]rec, n)
	t := int64(0)
	for i := range rs {
		t += rnd.Int64N(3e9) // up to 3 s apart, in order
		rs[i] = rec{k: fmt.Sprintf("key%03d", rnd.IntN(keys)), v: rnd.Int64N(1000) - 100, ts: t}
	}
	return rs
}

func windowJob(recs []rec, channels int, sink core.Sink) (*runtime.Job, error) {
	def, err := window.New(window.Spec{
		Name: "per-minute", Key: []string{"k"}, Size: 60e9,
		Aggs: []window.Agg{
			{Name: "n", Func: window.Count},
			{Name: "total", Func: window.Sum, Field: "v"},
			{Name: "hi", Func: window.Max, Field: "v"},
			{Name: "mean", Func: window.Avg, Field: "v"},
		},
	}, testSchema)
	if err != nil {
		return nil, err
	}
	return &runtime.Job{
		Name:      "test",
		Source:    &sliceSource{recs: recs, rnd: rand.New(rand.NewPCG(7, 7))},
		EventTime: runtime.EventTime{Field: "ts"},
		Region:    &runtime.Region{Channels: channels, Key: []string{"k"}, Ops: []core.OperatorDef{def}},
		Sink:      sink,
	}, nil
}

// expected computes the per-minute aggregates directly.
func expected(recs []rec) []string {
	type agg struct{ n, total, hi int64 }
	m := map[[2]string]*agg{}
	var keys [][2]string
	for _, r := range recs {
		start := r.ts / 60e9 * 60e9
		k := [2]string{fmt.Sprintf("%020d", start), r.k}
		a := m[k]
		if a == nil {
			a = &agg{hi: r.v}
			m[k] = a
			keys = append(keys, k)
		}
		a.n++
		a.total += r.v
		a.hi = max(a.hi, r.v)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i][0] < keys[j][0] || keys[i][0] == keys[j][0] && keys[i][1] < keys[j][1]
	})
	var out []string
	for _, k := range keys {
		a := m[k]
		var start int64
		fmt.Sscanf(k[0], "%d", &start)
		var b []byte
		b = core.AppendText(b, core.Timestamp, core.TimeValue(start))
		b = append(b, ',')
		b = core.AppendText(b, core.Timestamp, core.TimeValue(start+60e9))
		b = fmt.Appendf(b, ",%s,%d,%d,%d,", k[1], a.n, a.total, a.hi)
		b = core.AppendText(b, core.Float64, core.FloatValue(float64(a.total)/float64(a.n)))
		out = append(out, string(b))
	}
	return out
}

// The determinism contract: the same output, record for record, for every
// channel count, and equal to a direct computation.
func TestWindowJobIndependentOfChannels(t *testing.T) {
	recs := genRecords(20000, 37, 42)
	want := expected(recs)
	for _, n := range []int{1, 2, 3, 4, 8} {
		sink := &memSink{}
		job, err := windowJob(recs, n, sink)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := runtime.Run(context.Background(), job)
		if err != nil {
			t.Fatalf("%d channels: %v", n, err)
		}
		if !sink.closed || sink.aborted {
			t.Fatalf("%d channels: sink closed=%v aborted=%v", n, sink.closed, sink.aborted)
		}
		if !slices.Equal(sink.lines, want) {
			t.Fatalf("%d channels: %d lines vs %d expected: %s", n, len(sink.lines), len(want), diffAt(sink.lines, want))
		}
		if rep.RecordsIn != int64(len(recs)) || rep.RecordsOut != int64(len(want)) || len(rep.Channels) != n {
			t.Fatalf("%d channels: report in=%d out=%d channels=%d", n, rep.RecordsIn, rep.RecordsOut, len(rep.Channels))
		}
		var perChannel int64
		for _, c := range rep.Channels {
			perChannel += c.Records
		}
		if perChannel != int64(len(recs)) {
			t.Fatalf("%d channels processed %d records, want %d", n, perChannel, len(recs))
		}
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return "<none>"
	}
	return s[0]
}

// filterOdd is a stateless test operator that drops records with odd v,
// filtering in place.
type filterOdd struct{ core.Base }

func (filterOdd) Process(in *core.Batch, out *core.Emitter) error {
	j := 0
	for i := 0; i < in.Len; i++ {
		if in.Row(i)[1].Int()%2 == 0 {
			in.Move(j, i)
			j++
		}
	}
	in.Truncate(j)
	return out.Emit(in)
}

// A stateless round-robin region keeps the input order exactly, with pulses
// keeping the merge moving through channels whose records are all dropped.
func TestStatelessRegionKeepsOrder(t *testing.T) {
	recs := genRecords(30000, 5, 9)
	var want []string
	for _, r := range recs {
		if r.v%2 == 0 {
			want = append(want, fmt.Sprintf("%s,%d", r.k, r.v))
		}
	}
	def := core.OperatorDef{Name: "even", Out: testSchema, New: func(core.Env) (core.Operator, error) { return filterOdd{}, nil }}
	for _, keyed := range []bool{false, true} {
		for _, n := range []int{1, 3, 8} {
			sink := &memSink{}
			reg := &runtime.Region{Channels: n, Ops: []core.OperatorDef{def}}
			if keyed {
				reg.Key = []string{"k"}
			}
			job := &runtime.Job{Source: &sliceSource{recs: recs, rnd: rand.New(rand.NewPCG(1, 2))}, Region: reg, Sink: sink, RingSize: 4}
			if _, err := runtime.Run(context.Background(), job); err != nil {
				t.Fatal(err)
			}
			got := make([]string, len(sink.lines))
			for i, l := range sink.lines {
				parts := strings.Split(l, ",")
				got[i] = parts[0] + "," + parts[1]
			}
			if !slices.Equal(got, want) {
				t.Fatalf("keyed=%v channels=%d: %d records, want %d, or out of order", keyed, n, len(got), len(want))
			}
		}
	}
}

// A failing source stops every stage, aborts the sink, and returns its error.
func TestSourceErrorStopsJob(t *testing.T) {
	boom := errors.New("disk on fire")
	for _, n := range []int{0, 1, 4} {
		sink := &memSink{}
		job, err := windowJob(genRecords(5000, 10, 1), max(n, 1), sink)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			job.Region = nil
		}
		job.Source.(*sliceSource).fail = boom
		_, err = runtime.Run(context.Background(), job)
		if !errors.Is(err, boom) {
			t.Fatalf("channels %d: err = %v, want %v", n, err, boom)
		}
		if !sink.aborted || sink.closed {
			t.Fatalf("channels %d: sink aborted=%v closed=%v", n, sink.aborted, sink.closed)
		}
	}
}

// failAfter fails in channel processing after some batches.
type failAfter struct {
	core.Base
	n int
}

func (f *failAfter) Process(in *core.Batch, out *core.Emitter) error {
	if f.n--; f.n < 0 {
		return errors.New("operator exploded")
	}
	return out.Emit(in)
}

func TestOperatorErrorStopsJob(t *testing.T) {
	def := core.OperatorDef{Name: "bomb", Out: testSchema, New: func(env core.Env) (core.Operator, error) {
		return &failAfter{n: 3 + env.Channel}, nil
	}}
	sink := &memSink{}
	job := &runtime.Job{Source: &sliceSource{recs: genRecords(100000, 50, 3), rnd: rand.New(rand.NewPCG(1, 2))},
		Region: &runtime.Region{Channels: 4, Key: []string{"k"}, Ops: []core.OperatorDef{def}}, Sink: sink, RingSize: 2}
	_, err := runtime.Run(context.Background(), job)
	if err == nil || !strings.Contains(err.Error(), "operator exploded") {
		t.Fatalf("err = %v", err)
	}
	if !sink.aborted {
		t.Fatal("sink not aborted")
	}
}

func TestInterrupt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sink := &memSink{}
	job, _ := windowJob(genRecords(1000, 3, 1), 2, sink)
	rep, err := runtime.Run(ctx, job)
	if !errors.Is(err, runtime.ErrInterrupted) || !rep.Interrupted || !sink.aborted {
		t.Fatalf("err=%v interrupted=%v aborted=%v", err, rep.Interrupted, sink.aborted)
	}
}

func diffAt(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("line %d: got %q want %q", i, a[i], b[i])
		}
	}
	return "length"
}

type panicky struct{ core.Base }

func (panicky) Process(*core.Batch, *core.Emitter) error { panic("bad operator") }

// A panic in a channel becomes the job's error; every stage stops.
func TestPanicStopsJob(t *testing.T) {
	def := core.OperatorDef{Name: "panicky", Out: testSchema, New: func(core.Env) (core.Operator, error) { return panicky{}, nil }}
	for _, placer := range []runtime.Placer{nil, runtime.NewCorePlacer(2, 0, 0, nil)} {
		sink := &memSink{}
		job := &runtime.Job{Source: &sliceSource{recs: genRecords(50000, 20, 3), rnd: rand.New(rand.NewPCG(1, 2))},
			Region: &runtime.Region{Channels: 2, Key: []string{"k"}, Ops: []core.OperatorDef{def}}, Sink: sink, RingSize: 2}
		_, err := runtime.Run(context.Background(), job, runtime.Placement(placer))
		if err == nil || !strings.Contains(err.Error(), "panicked: bad operator") || !sink.aborted {
			t.Fatalf("err = %v, aborted %v", err, sink.aborted)
		}
	}
}

// Every batch reaching the sink carries the stamp of when its oldest
// record entered the job; the live view reads counters while the job runs.
func TestStampsAndLiveView(t *testing.T) {
	recs := genRecords(20000, 30, 4)
	sink := &memSink{}
	job, err := windowJob(recs, 3, sink)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().UnixNano()
	var seen, bad int
	job.OnSink = func(b *core.Batch) {
		seen++
		if b.Stamp < start || b.Stamp > time.Now().UnixNano() {
			bad++
		}
	}
	var live runtime.Live
	onStart := runtime.OnStart(func(l runtime.Live) { live = l })
	rep, err := runtime.Run(context.Background(), job, onStart)
	if err != nil {
		t.Fatal(err)
	}
	if seen == 0 || bad != 0 {
		t.Fatalf("%d batches at the sink, %d with a stamp outside the run", seen, bad)
	}
	snap := live.Snapshot()
	if snap.RecordsIn != rep.RecordsIn || snap.RecordsOut != rep.RecordsOut || live.Channels() != 3 {
		t.Fatalf("live view after the run: in %d out %d channels %d; report in %d out %d", snap.RecordsIn, snap.RecordsOut, live.Channels(), rep.RecordsIn, rep.RecordsOut)
	}
}

// A request refused before it reached the job (Live.Refuse: the job
// loader's checks of an update) is recorded as the job's own refusals
// are: counted in Plan.Refused and the report, kept in the log, logged.
func TestRefuseRecorded(t *testing.T) {
	job, err := windowJob(genRecords(2000, 30, 4), 2, &memSink{})
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	job.Log = slog.New(slog.NewTextHandler(&logged, nil))
	var live runtime.Live
	var out runtime.Outcome
	var rerr error
	onStart := runtime.OnStart(func(l runtime.Live) {
		live = l
		out, rerr = l.Refuse(runtime.KindUpdate, "api", map[string]string{"operator": "win"}, fmt.Errorf("update win: %w: size (1s → 2s)", runtime.ErrRefused))
	})
	rep, err := runtime.Run(context.Background(), job, onStart)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(rerr, runtime.ErrRefused) || out.Kind != runtime.KindUpdate || out.Err != rerr.Error() {
		t.Fatalf("Refuse returned %+v, %v", out, rerr)
	}
	p := live.Plan()
	if p.Refused[runtime.KindUpdate] != 1 || rep.Refused[runtime.KindUpdate] != 1 || len(p.Log) != 1 || p.Log[0].Err != rerr.Error() {
		t.Fatalf("plan refused %v, log %+v; report refused %v; want the update once", p.Refused, p.Log, rep.Refused)
	}
	if !strings.Contains(logged.String(), `msg="reconfiguration refused" kind=update reason=api operator=win err="update win: refused: size (1s → 2s)"`) {
		t.Fatalf("log:\n%s", logged.String())
	}
}
