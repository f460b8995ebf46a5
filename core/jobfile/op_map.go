package jobfile

import (
	"fmt"

	"github.com/goccy/go-yaml"

	"streamd/core"
	"streamd/core/ops"
)

// map: {name: expression, …} computes fields (ops.Map): an expression
// replaces the input field of its name, or adds a field at the end.
func init() {
	registerOp(opEntry[yaml.MapSlice]{name: "map", rank: 20, build: buildMap})
}

// buildMap compiles each expression once, reporting errors at their
// position in the file, and hands the programs to ops.Map.
func buildMap(b *opBuild, fields yaml.MapSlice) (core.OperatorDef, error) {
	var mfs []ops.MapField
	for _, it := range fields {
		name := fmt.Sprint(it.Key)
		src, ok := it.Value.(string)
		if !ok {
			src = fmt.Sprint(it.Value)
		}
		p, err := b.f.compile(b.path+"."+name, src, b.in)
		if err != nil {
			return core.OperatorDef{}, err
		}
		mfs = append(mfs, ops.MapField{Name: name, Expr: src, Program: p})
	}
	return ops.Map(b.name, mfs, true, b.in, nil)
}
