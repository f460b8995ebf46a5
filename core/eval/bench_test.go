package eval

import (
	"testing"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"streamd/core"
)

// Paired benchmarks: the fast path, this package's vm fallback, and
// expr-lang's own vm.Run with a reused env map and VM (the baseline), on
// the same expressions over the same batch. ns/record is per record.

func benchBatch() *core.Batch {
	b := core.NewBatch(flights)
	for i := range core.BatchSize {
		row := b.Append(uint64(i), 0, 0, int64(i+1))
		copy(row, flightRow("AA", "ORD", int64(i%60-10), float64(100+i), i%17 == 0, "2024-03-01T10:00:00Z", "2024-03-01T12:30:00Z"))
	}
	return b
}

func benchExpr(b *testing.B, src string) {
	batch := benchBatch()
	p := mustCompile(b, src)
	perRecord := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch.Len), "ns/record")
	}
	b.Run("fast", func(b *testing.B) {
		if !p.Fast() {
			b.Fatalf("%q is not on the fast path", src)
		}
		b.ReportAllocs()
		for b.Loop() {
			for i := range batch.Len {
				if _, err := p.Eval(batch.Row(i)); err != nil {
					b.Fatal(err)
				}
			}
		}
		perRecord(b)
	})
	if p.Type() == core.Bool {
		b.Run("fast-EvalBool", func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				for i := range batch.Len {
					if ok, _ := p.EvalBool(batch.Row(i)); ok {
						n++
					}
				}
			}
			perRecord(b)
		})
	}
	b.Run("fallback", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i := range batch.Len {
				if _, err := p.evalVM(batch.Row(i)); err != nil {
					b.Fatal(err)
				}
			}
		}
		perRecord(b)
	})
	b.Run("exprvm", func(b *testing.B) {
		env := map[string]any{}
		for _, f := range flights.Fields {
			env[f.Name] = zeroOf(f.Type)
		}
		prog, err := expr.Compile(src, expr.Env(env))
		if err != nil {
			b.Fatal(err)
		}
		var m vm.VM
		b.ReportAllocs()
		for b.Loop() {
			for i := range batch.Len {
				row := batch.Row(i)
				env["delay"] = int(row[2].Int())
				env["distance"] = row[3].Float()
				if _, err := m.Run(prog, env); err != nil {
					b.Fatal(err)
				}
			}
		}
		perRecord(b)
	})
}

func BenchmarkDelayGT15(b *testing.B) { benchExpr(b, "delay > 15") }

func BenchmarkDistanceTimes2PlusDelay(b *testing.B) { benchExpr(b, "distance * 2 + delay") }

func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile("origin in ['ORD', 'JFK'] && delay > 15 && arr - dep > duration('2h')", flights); err != nil {
			b.Fatal(err)
		}
	}
}
