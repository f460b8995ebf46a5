package ops

import (
	"fmt"

	"streamd/core"
	"streamd/core/eval"
)

// MapField is one computed field of Map: Name gets the value of the
// expression Expr, evaluated over the input record.
type MapField struct {
	Name string
	Expr string
	// Program, if set, is Expr already compiled against Map's input
	// schema (eval.Compile with the same *core.Schema; a loader that
	// compiled it to report errors passes it on): Map uses it and does
	// not compile Expr again.
	Program *eval.Program
}

// Map computes new fields from expressions over each input record.
//
// Shapes: the output schema is the input's fields (if keepInput), in order,
// a field of the same name as a MapField replaced in place (with the
// expression's type), followed by the remaining MapFields in the order
// given. Every expression sees the input record, not fields computed by
// the same Map.
//
// Ownership: Process reads the borrowed input batch and writes one output
// record per input record through out.Append, copying Seq, Hash, Time and
// Pos; the caller releases the input. Strings are shared, never copied.
//
// Every instance shares the compiled expressions, which are safe for
// concurrent use (package eval): each is compiled once per job, not once
// per channel.
//
// Errors: the constructor returns *eval.Error (wrapped, with the field's
// name) for a bad expression, and an error for a Program compiled against
// another schema than in. A run-time evaluation error on a record goes
// through errs (nil: the instance's Env.Errors; both nil: fail); a record
// that fails is not emitted.
func Map(name string, fields []MapField, keepInput bool, in *core.Schema, errs *core.ErrorPolicy) (core.OperatorDef, error) {
	if len(fields) == 0 {
		return core.OperatorDef{}, fmt.Errorf("map %s: no fields", name)
	}
	var outFields []core.Field
	if keepInput {
		outFields = append(outFields, in.Fields...)
	}
	progs := make([]*eval.Program, len(fields))
	dst := make([]int, len(fields))
	names := make([]string, len(fields))
	seen := make(map[string]bool, len(fields))
	for k, mf := range fields {
		if seen[mf.Name] {
			return core.OperatorDef{}, fmt.Errorf("map %s: field %q appears twice", name, mf.Name)
		}
		seen[mf.Name] = true
		p := mf.Program
		if p == nil {
			var err error
			if p, err = eval.Compile(mf.Expr, in); err != nil {
				return core.OperatorDef{}, fmt.Errorf("map %s: field %q: %w", name, mf.Name, err)
			}
		} else if p.Schema() != in {
			return core.OperatorDef{}, fmt.Errorf("map %s: field %q: the expression was compiled against another schema", name, mf.Name)
		}
		progs[k], names[k] = p, mf.Name
		f := core.Field{Name: mf.Name, Type: p.Type(), Nullable: p.Nullable()}
		if i := in.Index(mf.Name); keepInput && i >= 0 {
			outFields[i], dst[k] = f, i
		} else {
			dst[k] = len(outFields)
			outFields = append(outFields, f)
		}
	}
	out, err := core.NewSchema(outFields...)
	if err != nil {
		return core.OperatorDef{}, fmt.Errorf("map %s: %w", name, err)
	}
	// Input fields the output keeps unchanged: with keepInput, all but
	// those a field of the same name replaces.
	keep := make([]int, len(in.Fields))
	for i := range keep {
		keep[i] = -1
		if keepInput {
			keep[i] = i
		}
	}
	for _, d := range dst {
		if d < len(keep) && keepInput {
			keep[d] = -1
		}
	}
	return core.OperatorDef{
		Name: name,
		Out:  out,
		Keep: keep,
		New: func(env core.Env) (core.Operator, error) {
			return &mapper{name: name, in: in, progs: progs, names: names, dst: dst, keep: keepInput,
				scratch: core.OwnLines[core.Value](len(progs)), errs: policy(errs, env)}, nil
		},
	}, nil
}

type mapper struct {
	core.Base
	name    string
	in      *core.Schema
	progs   []*eval.Program
	names   []string // the computed fields' names, for errors
	dst     []int    // output position of each expression's value
	keep    bool
	scratch []core.Value // one record's values, before it is known to succeed (core.OwnLines: written per record, on lines no other channel writes)
	errs    *core.ErrorPolicy
}

func (m *mapper) Process(in *core.Batch, out *core.Emitter) error {
	if err := checkWidth(m.name, m.in, in); err != nil {
		return err
	}
	w := in.Schema.Width()
	vals := in.Vals
next:
	for i := 0; i < in.Len; i++ {
		row := vals[i*w : (i+1)*w : (i+1)*w]
		for k, p := range m.progs {
			v, err := p.Eval(row)
			if err != nil {
				if err := bad(m.errs, m.name, in, i, fmt.Errorf("field %q: %w", m.names[k], err)); err != nil {
					return err
				}
				continue next
			}
			m.scratch[k] = v
		}
		o := out.Append(in.Seq[i], in.Hash[i], in.Time[i], in.Pos[i])
		if m.keep {
			copy(o, row)
		}
		for k, d := range m.dst {
			o[d] = m.scratch[k]
		}
	}
	return nil
}
