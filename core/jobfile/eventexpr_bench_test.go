package jobfile

import (
	"testing"

	"streamd/core"
	"streamd/core/eval"
)

// BenchmarkEventTime is the per-record cost of event time: reading an
// int64 field (the baseline: what admit does for event_time.field), an
// int64 and a timestamp expression on eval's closure path, and one that
// falls back to expr-lang's vm (a method call), which allocates.
func BenchmarkEventTime(b *testing.B) {
	schema := core.MustSchema(core.Field{Name: "day", Type: core.Timestamp}, core.Field{Name: "sec", Type: core.Int64},
		core.Field{Name: "ms", Type: core.Int64})
	row := []core.Value{core.TimeValue(1_774_656_000_000_000_000), core.IntValue(1_774_656_000), core.IntValue(250)}
	b.Run("field", func(b *testing.B) {
		b.ReportAllocs()
		var sum int64
		for range b.N {
			sum += row[1].Int() * 1e9
		}
		_ = sum
	})
	for _, c := range []struct{ name, src string }{
		{"expr-int", "sec * 1000 + ms"},
		{"expr-timestamp", `day + duration("1ms") * ms`},
		{"expr-vm", "day.Unix() * 1000 + ms"},
	} {
		b.Run(c.name, func(b *testing.B) {
			prog, err := eval.Compile(c.src, schema)
			if err != nil {
				b.Fatal(err)
			}
			of := eventTimeOf(prog, prog.Type())
			b.ReportAllocs()
			for range b.N {
				if _, err := of(row); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
