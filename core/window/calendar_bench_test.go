package window

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"streamd/core"
)

// BenchmarkProcessCalendar pairs a window's per-record path for fixed
// 24-hour windows with 1d windows in Europe/Paris (calendar panes), over
// 1,000 keys: records in time order within a day (the calendar's last pane
// is kept: two comparisons) and records spread over a week at random (a
// calendar lookup for most records). No allocation per record either way.
func BenchmarkProcessCalendar(b *testing.B) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		b.Fatal(err)
	}
	base := time.Date(2026, 10, 20, 0, 0, 0, 0, time.UTC).UnixNano()
	for _, order := range []string{"in-order", "week-random"} {
		rnd := rand.New(rand.NewPCG(1, 2))
		in := core.NewBatch(scriptSchema)
		for i := 0; !in.Full(); i++ {
			k := fmt.Sprintf("k%03d", rnd.IntN(1000))
			h := core.HashKey([]core.Value{core.StringValue(k)}, []int{0}, []core.Type{core.String})
			t := base + int64(i)*int64(time.Second)
			if order == "week-random" {
				t = base + rnd.Int64N(7*24*int64(time.Hour))
			}
			row := in.Append(1, h, t, 1)
			row[0], row[1] = core.StringValue(k), core.IntValue(rnd.Int64N(1000))
		}
		for _, c := range []struct {
			name string
			spec Spec
		}{
			{"fixed-24h", Spec{Size: int64(24 * time.Hour)}},
			{"calendar-1d-paris", Spec{Calendar: &Calendar{Size: Day, Loc: paris}}},
		} {
			b.Run(order+"/"+c.name, func(b *testing.B) {
				spec := c.spec
				spec.Name, spec.Key, spec.Groups = "w", []string{"k"}, 64
				spec.Aggs = []Agg{{Name: "n", Func: Count}, {Name: "s", Func: Sum, Field: "v"}}
				def, err := New(spec, scriptSchema)
				if err != nil {
					b.Fatal(err)
				}
				errs, _ := core.NewErrorPolicy(core.Fail, "")
				op, _ := def.New(core.Env{Channels: 1, Errors: errs})
				out := core.NewEmitter(def.Out, func(x *core.Batch) error { x.Release(); return nil }, nil)
				if err := op.Process(in, out); err != nil { // keys and panes exist
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if err := op.Process(in, out); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*core.BatchSize), "ns/record")
			})
		}
	}
}
