package jobfile

import (
	"reflect"
	"slices"
	"testing"

	"streamd/core"
	"streamd/core/eval"
)

// Every expression of a job file is compiled once, when the job is built:
// the program that type-checks it (and reports errors at their position in
// the file) is the one its operator runs, in every channel. Filter and map
// expressions used to be compiled twice, once by the loader and again by
// the operator's constructor.
func TestExpressionsCompiledOnce(t *testing.T) {
	var compiled []*eval.Program
	var sources []string
	compileExpr = func(src string, in *core.Schema) (*eval.Program, error) {
		p, err := eval.Compile(src, in)
		if err == nil {
			compiled = append(compiled, p)
			sources = append(sources, src)
		}
		return p, err
	}
	defer func() { compileExpr = eval.Compile }()

	f, err := Parse("testdata/job.yaml", []byte(`
source:
  csv: {path: in.csv, columns: {ts: timestamp, origin: string, delay: int64}}
event_time: {field: ts}
pipeline:
  - filter: delay >= 0
  - map: {late: delay > 15, twice: delay * 2}
region:
  channels: 3
  key_by: [origin]
  ops:
    - filter: twice < 1000
    - window: {size: 1h, aggregates: {n: count, late: count_if(late)}}
sink:
  discard:
`))
	if err != nil {
		t.Fatal(err)
	}
	job, err := f.Build(Options{Validate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer job.Source.Close()
	want := []string{"delay >= 0", "delay > 15", "delay * 2", "twice < 1000", "late"}
	if !slices.Equal(sources, want) {
		t.Fatalf("compiled %q, want each expression once: %q", sources, want)
	}

	// The operators run the loader's programs, and their instances share
	// them.
	instances := func(defs []core.OperatorDef, channels int) []core.Operator {
		var ops []core.Operator
		for _, d := range defs {
			for c := range channels {
				op, err := d.New(core.Env{Channel: c, Channels: channels})
				if err != nil {
					t.Fatal(err)
				}
				ops = append(ops, op)
			}
		}
		return ops
	}
	used := map[*eval.Program]bool{}
	for _, op := range append(instances(job.Pre, 1), instances(job.Region.Ops, 3)...) {
		for _, p := range programsIn(reflect.ValueOf(op), map[ref]bool{}) {
			if !slices.Contains(compiled, p) {
				t.Errorf("%T runs a program for %q that the loader did not compile: compiled a second time", op, p.Source())
			}
			used[p] = true
		}
	}
	if len(used) != len(want) {
		t.Errorf("the operators run %d programs, want the %d compiled", len(used), len(want))
	}
	if len(sources) != len(want) {
		t.Errorf("instantiating the operators compiled more: %q", sources[len(want):])
	}
}

// ref is a pointer and its type: a struct and its first field share an
// address.
type ref struct {
	p uintptr
	t reflect.Type
}

// programsIn returns the *eval.Program values reachable from v through
// pointers, interfaces, structs, slices and arrays (unexported fields
// included).
func programsIn(v reflect.Value, seen map[ref]bool) []*eval.Program {
	progType := reflect.TypeFor[*eval.Program]()
	switch v.Kind() {
	case reflect.Pointer:
		r := ref{v.Pointer(), v.Type()}
		if v.IsNil() || seen[r] {
			return nil
		}
		seen[r] = true
		if v.Type() == progType {
			return []*eval.Program{(*eval.Program)(v.UnsafePointer())}
		}
		return programsIn(v.Elem(), seen)
	case reflect.Interface:
		return programsIn(v.Elem(), seen)
	case reflect.Struct:
		var ps []*eval.Program
		for i := range v.NumField() {
			ps = append(ps, programsIn(v.Field(i), seen)...)
		}
		return ps
	case reflect.Slice, reflect.Array:
		var ps []*eval.Program
		for i := range v.Len() {
			ps = append(ps, programsIn(v.Index(i), seen)...)
		}
		return ps
	}
	return nil
}
