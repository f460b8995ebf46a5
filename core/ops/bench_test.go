package ops

import (
	"path/filepath"
	"testing"

	"streamd/core"
)

// Benchmarks run one full batch (core.BatchSize records) per op through
// Process with pooled batches: the collecting next releases every output
// batch, so a steady state allocates nothing. ns/record is per input record.

func benchInput() *core.Batch {
	fs := make([]flight, core.BatchSize)
	origins := []string{"ORD", "ATL", "SFO", "JFK", "DBN", "LAX", "XXX"}
	for i := range fs {
		fs[i] = flight{"AA", origins[i%len(origins)], int64(i%60 - 10), float64(100 + i)}
	}
	return flightBatch(fs)
}

func benchOp(b *testing.B, def core.OperatorDef, forwards bool) {
	op, err := def.New(core.Env{})
	if err != nil {
		b.Fatal(err)
	}
	template := benchInput()
	defer template.Release()
	var n int
	out := core.NewEmitter(def.Out, func(o *core.Batch) error { n += o.Len; o.Release(); return nil }, nil)
	b.ReportAllocs()
	for b.Loop() {
		in := refill(template)
		if err := op.Process(in, out); err != nil {
			b.Fatal(err)
		}
		if err := out.Flush(); err != nil {
			b.Fatal(err)
		}
		if !forwards {
			in.Release()
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*template.Len), "ns/record")
	if n == 0 {
		b.Fatal("no output")
	}
}

// refill takes a pooled batch and copies template into it in bulk.
func refill(template *core.Batch) *core.Batch {
	in := core.NewBatch(template.Schema)
	in.Vals = append(in.Vals, template.Vals...)
	in.Seq = append(in.Seq, template.Seq...)
	in.Hash = append(in.Hash, template.Hash...)
	in.Time = append(in.Time, template.Time...)
	in.Pos = append(in.Pos, template.Pos...)
	in.Len = template.Len
	return in
}

// BenchmarkCopyBatch is the cost of refilling the input batch that every
// benchmark below pays: subtract it to see the operator's own cost.
func BenchmarkCopyBatch(b *testing.B) {
	template := benchInput()
	b.ReportAllocs()
	for b.Loop() {
		refill(template).Release()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*template.Len), "ns/record")
}

func BenchmarkFilter(b *testing.B) {
	def, err := Filter("f", "delay > 15", flights, nil)
	if err != nil {
		b.Fatal(err)
	}
	benchOp(b, def, true)
}

func BenchmarkFilterCompound(b *testing.B) {
	def, err := Filter("f", "origin in ['ORD', 'SFO', 'JFK'] && distance * 2 + delay > 300", flights, nil)
	if err != nil {
		b.Fatal(err)
	}
	benchOp(b, def, true)
}

func BenchmarkMap(b *testing.B) {
	def, err := Map("m", []MapField{{Name: "score", Expr: "distance * 2 + delay"}, {Name: "late", Expr: "delay > 15"}}, true, flights, nil)
	if err != nil {
		b.Fatal(err)
	}
	benchOp(b, def, false)
}

func BenchmarkProject(b *testing.B) {
	def, err := Project("p", []string{"origin as airport", "delay"}, flights)
	if err != nil {
		b.Fatal(err)
	}
	benchOp(b, def, false)
}

func BenchmarkLookupCSV(b *testing.B) {
	def, err := LookupCSV("l", LookupCSVOptions{Path: filepath.Join(dataDir(b), "airports.csv"), Key: "origin", TableKey: "iata",
		Fields: []LookupField{{Column: "city"}, {Column: "state"}}}, flights, nil)
	if err != nil {
		b.Fatal(err)
	}
	benchOp(b, def, false)
}
