package window

import (
	"testing"

	"streamd/core"
)

// BenchmarkHold is a rebalance step per batch, two ways: held=false hands
// every other key group of 16 over, then processes the batch (the
// gainer waited for the handoff); held=true holds those groups, processes
// the batch (their records kept) and then hands them over (their records
// applied). The two instances swap roles each batch. 512 records of 200
// keys in one pane. The allocations are the handoff's (the firing index
// released, once per step), the same both ways: holding allocates nothing
// per record once warm.
func BenchmarkHold(b *testing.B) {
	for _, holding := range []bool{false, true} {
		b.Run(map[bool]string{false: "held=false", true: "held=true"}[holding], func(b *testing.B) {
			def, err := New(Spec{Name: "w", Key: []string{"k"}, Size: 3600e9, Aggs: []Agg{{Name: "n", Func: Count}, {Name: "sum", Func: Sum, Field: "v"}, {Name: "max", Func: Max, Field: "v"}}, Groups: 16}, scriptSchema)
			if err != nil {
				b.Fatal(err)
			}
			errs, _ := core.NewErrorPolicy(core.Skip, "")
			ops := [2]*windowOp{}
			for i := range ops {
				op, err := def.New(core.Env{Channels: 2, Errors: errs})
				if err != nil {
					b.Fatal(err)
				}
				ops[i] = op.(*windowOp)
			}
			in := core.NewBatch(scriptSchema)
			for i := 0; !in.Full(); i++ {
				k := int64(i % 200)
				key := holdKey(k)
				row := in.Append(uint64(i+1), core.HashKey([]core.Value{key}, []int{0}, []core.Type{core.String}), 1e9, int64(i+1))
				row[0], row[1] = key, core.IntValue(k)
			}
			moved := []int{1, 3, 5, 7, 9, 11, 13, 15}
			out := core.NewEmitter(nil, func(x *core.Batch) error { x.Release(); return nil }, nil)
			b.ReportAllocs()
			b.ResetTimer()
			for n := range b.N {
				gain, lose := ops[n%2], ops[1-n%2]
				if holding {
					gain.HoldGroups(moved)
				} else {
					gain.AdoptGroups(moved, lose.ReleaseGroups(moved))
				}
				if err := gain.Process(in, out); err != nil {
					b.Fatal(err)
				}
				if holding {
					gain.AdoptGroups(moved, lose.ReleaseGroups(moved))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*core.BatchSize), "ns/record")
		})
	}
}
