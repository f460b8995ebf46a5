package window

import (
	"fmt"
	"runtime"
	"testing"

	"streamd/core"
)

// BenchmarkSnapshotGroups serialises a window instance's whole state
// (keys × one pane × count, sum, max over 128 key groups), the work each
// checkpoint does per channel, with and without group prefetching (warm);
// ns/key is the pass divided by the key count.
func BenchmarkSnapshotGroups(b *testing.B) {
	for _, keys := range []int{10_000, 250_000} {
		op, groups := snapshotFixture(b, keys)
		for _, prefetch := range []bool{false, true} {
			b.Run(fmt.Sprintf("keys=%d/prefetch=%v", keys, prefetch), func(b *testing.B) {
				noWarm = !prefetch
				defer func() { noWarm = false }()
				var buf []byte
				runtime.GC() // the fixture's garbage: not the snapshot's cost
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					var err error
					buf, err = op.(core.Snapshotter).SnapshotGroups(buf[:0], groups)
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(keys), "ns/key")
				b.ReportMetric(float64(len(buf))/float64(keys), "bytes/key")
			})
		}
	}
}

// BenchmarkCopyOnWriteSnapshot measures a whole copy-on-write snapshot
// (BeginSnapshot, then Parts) of the same state, with no writes in
// between: the background goroutine's cost per key. With release, each
// snapshot is released after it, as the checkpoint coordinator does once
// the files are written, and the next one writes into its buffers.
func BenchmarkCopyOnWriteSnapshot(b *testing.B) {
	const keys = 250_000
	op, groups := snapshotFixture(b, keys)
	for _, release := range []bool{false, true} {
		b.Run(fmt.Sprintf("release=%v", release), func(b *testing.B) {
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			n := 0
			for range b.N {
				s := op.(core.AsyncSnapshotter).BeginSnapshot(groups)
				n = 0
				for _, p := range s.Parts() {
					n += len(p)
				}
				if release {
					s.Release()
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(keys), "ns/key")
			b.ReportMetric(float64(n)/float64(keys), "bytes/key")
		})
	}
}

func snapshotFixture(b *testing.B, keys int) (core.Operator, []int) {
	def, op := windowFixture(b, 128, 3, core.Env{Channel: 0, Channels: 1})
	fillKeys(b, def, op, keys, true)
	groups := make([]int, 128)
	for g := range groups {
		groups[g] = g
	}
	return op, groups
}

// windowFixture builds a 1-minute window over (key, value) with groups key
// groups and the first nAggs of count, sum and max, and one instance of it
// (env gets an error policy and no watermark).
func windowFixture(b *testing.B, groups, nAggs int, env core.Env) (core.OperatorDef, core.Operator) {
	schema := core.MustSchema(core.Field{Name: "key", Type: core.String}, core.Field{Name: "value", Type: core.Int64})
	def, err := New(Spec{Name: "w", Key: []string{"key"}, Size: 60e9, Slide: 60e9, Groups: groups,
		Aggs: []Agg{{Name: "n", Func: Count}, {Name: "total", Func: Sum, Field: "value"}, {Name: "top", Func: Max, Field: "value"}}[:nAggs]}, schema)
	if err != nil {
		b.Fatal(err)
	}
	return def, windowInstance(b, def, env)
}

// windowInstance is one more instance of def.
func windowInstance(b *testing.B, def core.OperatorDef, env core.Env) core.Operator {
	env.Errors, _ = core.NewErrorPolicy(core.Fail, "")
	env.Watermark = core.NoTime
	op, err := def.New(env)
	if err != nil {
		b.Fatal(err)
	}
	return op
}

// fillKeys sends op one record for each of keys keys ("k0000000", …), in
// key order; timed says whether key i's record is at i µs or all at 0.
func fillKeys(b *testing.B, def core.OperatorDef, op core.Operator, keys int, timed bool) {
	schema := core.MustSchema(core.Field{Name: "key", Type: core.String}, core.Field{Name: "value", Type: core.Int64})
	out := core.NewEmitter(def.Out, func(x *core.Batch) error { x.Release(); return nil }, nil)
	for i := 0; i < keys; {
		in := core.NewBatch(schema)
		for ; i < keys && !in.Full(); i++ {
			k := fmt.Sprintf("k%07d", i)
			h := core.HashKey([]core.Value{core.StringValue(k)}, []int{0}, []core.Type{core.String})
			t := int64(0)
			if timed {
				t = int64(i) * 1000
			}
			row := in.Append(uint64(i+1), h, t, int64(i+1))
			row[0], row[1] = core.StringValue(k), core.IntValue(int64(i%1000))
		}
		if err := op.Process(in, out); err != nil {
			b.Fatal(err)
		}
		in.Release()
	}
}
