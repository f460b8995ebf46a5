package ops

import (
	"fmt"

	"streamd/core"
)

// Project selects, reorders and renames columns: each of fields is
// "column" or "column as name". No expressions: it copies values.
//
// Shapes: the output schema has one field per entry of fields, in that
// order, with the input column's type.
//
// Ownership: Process reads the borrowed input batch and writes one output
// record per input record through out.Append, copying Seq, Hash, Time and
// Pos; the caller releases the input.
//
// Errors: the constructor fails on an unknown column (listing the fields
// there are), a malformed entry or a duplicate output name. Process fails
// only on a batch of the wrong width.
func Project(name string, fields []string, in *core.Schema) (core.OperatorDef, error) {
	cols := make([]Column, len(fields))
	for k, f := range fields {
		col, as, err := splitAs(f)
		if err != nil {
			return core.OperatorDef{}, fmt.Errorf("project %s: %w", name, err)
		}
		cols[k] = Column{From: col, As: as}
	}
	return ProjectColumns(name, cols, in)
}

// Column is one output column of ProjectColumns: input column From, named
// As (From if empty).
type Column struct {
	From, As string
}

// ProjectColumns is Project with the columns already split.
func ProjectColumns(name string, cols []Column, in *core.Schema) (core.OperatorDef, error) {
	if len(cols) == 0 {
		return core.OperatorDef{}, fmt.Errorf("project %s: no columns", name)
	}
	src := make([]int, len(cols))
	outFields := make([]core.Field, len(cols))
	for k, c := range cols {
		i, err := in.Lookup(c.From)
		if err != nil {
			return core.OperatorDef{}, fmt.Errorf("project %s: %w", name, err)
		}
		as := c.As
		if as == "" {
			as = c.From
		}
		src[k], outFields[k] = i, core.Field{Name: as, Type: in.Fields[i].Type, Nullable: in.Fields[i].Nullable}
	}
	out, err := core.NewSchema(outFields...)
	if err != nil {
		return core.OperatorDef{}, fmt.Errorf("project %s: %w", name, err)
	}
	keep := make([]int, len(in.Fields)) // the first column taking input field i
	for i := range keep {
		keep[i] = -1
	}
	for k := len(src) - 1; k >= 0; k-- {
		keep[src[k]] = k
	}
	return core.OperatorDef{
		Name: name,
		Out:  out,
		Keep: keep,
		New: func(core.Env) (core.Operator, error) {
			return &project{name: name, in: in, src: src}, nil
		},
	}, nil
}

type project struct {
	core.Base
	name string
	in   *core.Schema
	src  []int // input position of each output column
}

func (p *project) Process(in *core.Batch, out *core.Emitter) error {
	if err := checkWidth(p.name, p.in, in); err != nil {
		return err
	}
	w := in.Schema.Width()
	vals := in.Vals
	for i := 0; i < in.Len; i++ {
		row := vals[i*w : (i+1)*w : (i+1)*w]
		o := out.Append(in.Seq[i], in.Hash[i], in.Time[i], in.Pos[i])
		for k, s := range p.src {
			o[k] = row[s]
		}
	}
	return nil
}
