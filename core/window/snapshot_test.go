package window

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"streamd/core"
	"streamd/kvstate"
)

// feeder drives window instances like a region would: records hashed and
// routed by a kvstate.Table, watermarks to every instance; it collects
// the rows they emit.
type feeder struct {
	def   core.OperatorDef
	table *kvstate.Table
	ops   []core.Operator
	outs  []*core.Emitter
	rows  []string
}

func newFeeder(t *testing.T, def core.OperatorDef, channels int, wm int64, rescaled bool) *feeder {
	f := &feeder{def: def, table: kvstate.NewTable(64, channels)}
	errs, _ := core.NewErrorPolicy(core.Fail, "")
	for c := 0; c < channels; c++ {
		op, err := def.New(core.Env{Channel: c, Channels: channels, Errors: errs, Watermark: wm, Rescaled: rescaled})
		if err != nil {
			t.Fatal(err)
		}
		f.ops = append(f.ops, op)
		f.outs = append(f.outs, core.NewEmitter(def.Out, func(b *core.Batch) error {
			for i := 0; i < b.Len; i++ {
				r := b.Row(i)
				f.rows = append(f.rows, rowText(def.Out, r))
			}
			b.Release()
			return nil
		}, nil))
	}
	return f
}

var snapSchema = core.MustSchema(core.Field{Name: "k", Type: core.String}, core.Field{Name: "v", Type: core.Int64})

func (f *feeder) records(t *testing.T, ts []int64, keys []string, vals []int64) {
	for c, op := range f.ops {
		b := core.NewBatch(snapSchema)
		for i := range ts {
			h := core.HashKey([]core.Value{core.StringValue(keys[i])}, []int{0}, []core.Type{core.String})
			if f.table.Owner(kvstate.KeyGroup(h, 64)) != c {
				continue
			}
			row := b.Append(uint64(i+1), h, ts[i], int64(i+1))
			row[0], row[1] = core.StringValue(keys[i]), core.IntValue(vals[i])
		}
		if err := op.Process(b, f.outs[c]); err != nil {
			t.Fatal(err)
		}
		f.outs[c].Flush()
		b.Release()
	}
}

func (f *feeder) watermark(t *testing.T, wm int64) {
	for c, op := range f.ops {
		if err := op.Watermark(wm, 0, f.outs[c]); err != nil {
			t.Fatal(err)
		}
		f.outs[c].Flush()
	}
}

func (f *feeder) finish(t *testing.T) []string {
	for c, op := range f.ops {
		if err := op.Finish(0, f.outs[c]); err != nil {
			t.Fatal(err)
		}
		f.outs[c].Flush()
	}
	sort.Strings(f.rows)
	return f.rows
}

// snapshot writes every instance's owned groups, then restore loads them
// into a fresh operator (new shared state) at another channel count.
func (f *feeder) snapshot(t *testing.T) [][]byte {
	var out [][]byte
	for c, op := range f.ops {
		data, err := op.(core.Snapshotter).SnapshotGroups(nil, f.table.Owned(c))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// Processing, snapshotting at a watermark, restoring into a new operator
// with another channel count and processing the rest gives exactly the
// uninterrupted output — tumbling and sliding, with out-of-order records.
func TestSnapshotRestoreAcrossChannelCounts(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		rnd := rand.New(rand.NewPCG(seed, 1))
		const n = 6000
		ts, keys, vals := make([]int64, n), make([]string, n), make([]int64, n)
		for i := range ts {
			ts[i] = int64(i)*1e8 + rnd.Int64N(5e9) // 0.1 s apart, up to 5 s out of order
			keys[i] = fmt.Sprintf("k%02d", rnd.IntN(40))
			vals[i] = rnd.Int64N(100)
		}
		size := int64(10e9)
		slide := size
		if seed%2 == 0 {
			slide = size / 5
		}
		mk := func() core.OperatorDef {
			def, err := New(Spec{Name: "w", Key: []string{"k"}, Size: size, Slide: slide, Groups: 64,
				Aggs: []Agg{{Name: "n", Func: Count}, {Name: "s", Func: Sum, Field: "v"}}}, snapSchema)
			if err != nil {
				t.Fatal(err)
			}
			return def
		}
		run := func(cut int, from, to int) []string {
			f := newFeeder(t, mk(), from, core.NoTime, false)
			wm := int64(core.NoTime)
			for i := 0; i < n; i += 500 {
				j := min(n, i+500)
				if i == cut {
					snaps := f.snapshot(t)
					g := newFeeder(t, mk(), to, wm, true)
					g.rows = f.rows
					for c, op := range g.ops {
						for _, s := range snaps {
							// Each new channel takes the groups it owns now.
							owns := func(grp int) bool { return g.table.Owner(grp) == c }
							if err := op.(core.Snapshotter).RestoreGroups(s, owns); err != nil {
								t.Fatal(err)
							}
						}
					}
					f = g
				}
				f.records(t, ts[i:j], keys[i:j], vals[i:j])
				wm = max(wm, slices.Max(ts[i:j])-5e9-1)
				f.watermark(t, wm)
			}
			return f.finish(t)
		}
		want := run(-1, 1, 1)
		for _, c := range []struct{ cut, from, to int }{{2500, 1, 1}, {3000, 3, 2}, {1500, 2, 5}} {
			if got := run(c.cut, c.from, c.to); !slices.Equal(got, want) {
				t.Fatalf("seed %d, restore at %d, %d→%d channels: %d rows vs %d", seed, c.cut, c.from, c.to, len(got), len(want))
			}
		}
	}
}

func TestRestoreRejectsTruncated(t *testing.T) {
	mk := func() core.OperatorDef {
		def, _ := New(Spec{Name: "w", Key: []string{"k"}, Size: 10e9, Groups: 64, Aggs: []Agg{{Name: "n", Func: Count}}}, snapSchema)
		return def
	}
	f := newFeeder(t, mk(), 1, core.NoTime, false)
	f.records(t, []int64{1e9, 2e9}, []string{"a", "b"}, []int64{1, 2})
	data := f.snapshot(t)[0]
	if g := newFeeder(t, mk(), 1, core.NoTime, true); g.ops[0].(core.Snapshotter).RestoreGroups(data, nil) != nil {
		t.Fatal("whole snapshot did not restore")
	}
	for cut := 0; cut < len(data); cut++ {
		g := newFeeder(t, mk(), 1, core.NoTime, true)
		if err := g.ops[0].(core.Snapshotter).RestoreGroups(data[:cut], nil); err == nil {
			t.Fatalf("snapshot truncated to %d of %d bytes restored without error", cut, len(data))
		}
	}
}

// The running aggregate restored at another channel count continues with
// the same totals.
func TestRunningSnapshotRestore(t *testing.T) {
	mk := func() core.OperatorDef {
		def, err := NewRunning(RunningSpec{Name: "r", Key: []string{"k"}, Groups: 64,
			Aggs: []Agg{{Name: "n", Func: Count}, {Name: "s", Func: Sum, Field: "v"}}}, snapSchema)
		if err != nil {
			t.Fatal(err)
		}
		return def
	}
	keys := []string{"a", "b", "c", "d", "e", "f", "g"}
	var ts []int64
	var ks []string
	var vs []int64
	for i := 0; i < 700; i++ {
		ts, ks, vs = append(ts, int64(i)), append(ks, keys[i%7]), append(vs, int64(i))
	}
	run := func(cut, from, to int) []string {
		f := newFeeder(t, mk(), from, core.NoTime, false)
		for i := 0; i < 700; i += 100 {
			if i == cut {
				snaps := f.snapshot(t)
				g := newFeeder(t, mk(), to, core.NoTime, true)
				g.rows = f.rows
				for c, op := range g.ops {
					for _, s := range snaps {
						if err := op.(core.Snapshotter).RestoreGroups(s, func(grp int) bool { return g.table.Owner(grp) == c }); err != nil {
							t.Fatal(err)
						}
					}
				}
				f = g
			}
			f.records(t, ts[i:i+100], ks[i:i+100], vs[i:i+100])
		}
		return f.finish(t)
	}
	want := run(-1, 1, 1)
	if got := run(300, 3, 2); !slices.Equal(got, want) {
		t.Fatalf("restored running aggregate differs: %d rows vs %d", len(got), len(want))
	}
}

func rowText(s *core.Schema, r []core.Value) string {
	var b []byte
	for j, f := range s.Fields {
		if j > 0 {
			b = append(b, ' ')
		}
		b = core.AppendText(b, f.Type, r[j])
	}
	return string(b)
}

// OperatorDef.State names everything a window's or running aggregate's
// state depends on, so that a checkpoint is not restored into another.
func TestOperatorState(t *testing.T) {
	def, err := New(Spec{Name: "w", Key: []string{"k"}, Size: 10e9, Slide: 5e9, Groups: 64,
		Aggs: []Agg{{Name: "n", Func: Count}, {Name: "s", Func: Sum, Field: "v"}}}, snapSchema)
	if err != nil {
		t.Fatal(err)
	}
	want := "window size=10000000000ns slide=5000000000ns key_groups=64 key=(k string) aggregates=(n=count(), s=sum(v int64))"
	if def.State != want {
		t.Errorf("window State\n%q, want\n%q", def.State, want)
	}
	run, err := NewRunning(RunningSpec{Name: "r", Key: []string{"k"}, Aggs: []Agg{{Name: "hi", Func: Max, Field: "v"}}}, snapSchema)
	if err != nil {
		t.Fatal(err)
	}
	if want := "aggregate key_groups=4096 key=(k string) aggregates=(hi=max(v int64))"; run.State != want {
		t.Errorf("running State %q, want %q", run.State, want)
	}
}

// Copy-on-write snapshots taken one after another, each released before
// the next (which then writes into its buffers), or not, hold exactly what
// SnapshotGroups writes at their barrier, whether the state grew, shrank
// (windows fired) or kept its size in between; an unreleased snapshot
// keeps its content while later ones are taken. Windows and running
// aggregates.
func TestCopyOnWriteSnapshotReleased(t *testing.T) {
	win, err := New(Spec{Name: "w", Key: []string{"k"}, Size: 10e9, Groups: 64,
		Aggs: []Agg{{Name: "n", Func: Count}, {Name: "s", Func: Sum, Field: "v"}}}, snapSchema)
	if err != nil {
		t.Fatal(err)
	}
	run, err := NewRunning(RunningSpec{Name: "r", Key: []string{"k"}, Groups: 64,
		Aggs: []Agg{{Name: "n", Func: Count}}}, snapSchema)
	if err != nil {
		t.Fatal(err)
	}
	for _, def := range []core.OperatorDef{win, run} {
		f := newFeeder(t, def, 1, core.NoTime, false)
		groups := f.table.Owned(0)
		op := f.ops[0]
		var kept *core.GroupSnapshot // a snapshot never released
		var keptData []byte
		for round := range 8 {
			// Rounds 0–3 add keys (the groups grow), round 4 fires the
			// windows (they shrink), the rest add a few again.
			n := 50 * (round + 1)
			if round >= 4 {
				n = 5
			}
			ts, keys, vals := make([]int64, n), make([]string, n), make([]int64, n)
			for i := range ts {
				ts[i], keys[i], vals[i] = int64(round)*11e9, fmt.Sprintf("k%d-%d", round%5, i), int64(i)
			}
			f.records(t, ts, keys, vals)
			if round == 4 {
				f.watermark(t, int64(round)*11e9)
			}
			want, err := op.(core.Snapshotter).SnapshotGroups(nil, groups)
			if err != nil {
				t.Fatal(err)
			}
			s := op.(core.AsyncSnapshotter).BeginSnapshot(groups)
			if got := s.Bytes(); !slices.Equal(got, want) {
				t.Fatalf("%s, round %d: copy-on-write snapshot differs from SnapshotGroups (%d vs %d bytes)", def.Name, round, len(got), len(want))
			}
			if round == 2 {
				kept, keptData = s, want
			} else {
				s.Release()
			}
		}
		if got := kept.Bytes(); !slices.Equal(got, keptData) {
			t.Fatalf("%s: the unreleased snapshot changed", def.Name)
		}
	}
}
