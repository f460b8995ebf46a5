package ops

import (
	"fmt"

	"streamd/core"
	"streamd/core/eval"
)

// Filter keeps the records for which cond, a Bool expression over in (see
// package eval), is true. It compiles cond and calls FilterProgram.
//
// Errors: the constructor returns eval's *eval.Error (with line and column
// within cond) for a bad expression, and FilterProgram's errors.
func Filter(name, cond string, in *core.Schema, errs *core.ErrorPolicy) (core.OperatorDef, error) {
	p, err := eval.Compile(cond, in)
	if err != nil {
		return core.OperatorDef{}, fmt.Errorf("filter %s: %w", name, err)
	}
	return FilterProgram(name, p, errs)
}

// FilterProgram keeps the records for which cond, a compiled Bool
// expression, is true. Its input schema is cond's (Program.Schema). Every
// instance shares cond, which is safe for concurrent use (package eval):
// an expression is compiled once per job, not once per channel.
//
// Shapes: in → in (same schema). Records keep their order and metadata.
//
// Ownership: Process compacts the borrowed batch in place (Batch.Move,
// Batch.Truncate) and passes that same batch on with out.Emit: no copy, no
// new batch. An emptied batch is released by the emitter.
//
// Errors: the constructor returns an error for a non-Bool cond. A run-time
// evaluation error on a record (integer % by zero) goes through errs (nil:
// the instance's Env.Errors; both nil: fail): under skip and dead_letter
// the record is dropped, under fail Process returns the *core.RecordError
// naming the record's position.
func FilterProgram(name string, cond *eval.Program, errs *core.ErrorPolicy) (core.OperatorDef, error) {
	if cond.Type() != core.Bool {
		return core.OperatorDef{}, fmt.Errorf("filter %s: condition %q is %s, not bool", name, cond.Source(), cond.Type())
	}
	in := cond.Schema()
	return core.OperatorDef{
		Name: name,
		Out:  in,
		Keep: core.KeepAll(len(in.Fields)),
		New: func(env core.Env) (core.Operator, error) {
			return &filter{name: name, in: in, p: cond, errs: policy(errs, env)}, nil
		},
	}, nil
}

type filter struct {
	core.Base
	name string
	in   *core.Schema
	p    *eval.Program
	errs *core.ErrorPolicy
}

func (f *filter) Process(in *core.Batch, out *core.Emitter) error {
	if err := checkWidth(f.name, f.in, in); err != nil {
		return err
	}
	w := in.Schema.Width()
	vals := in.Vals
	kept := 0
	for i := 0; i < in.Len; i++ {
		ok, err := f.p.EvalBool(vals[i*w : (i+1)*w : (i+1)*w])
		if err != nil {
			if err := bad(f.errs, f.name, in, i, err); err != nil {
				return err
			}
			continue
		}
		if ok {
			in.Move(kept, i)
			kept++
		}
	}
	in.Truncate(kept)
	return out.Emit(in)
}
