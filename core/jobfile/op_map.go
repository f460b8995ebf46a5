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

// buildMap compiles each expression to report errors at their position in
// the file.
func buildMap(b *opBuild, fields yaml.MapSlice) (core.OperatorDef, error) {
	var mfs []ops.MapField
	for _, it := range fields {
		name := fmt.Sprint(it.Key)
		src, ok := it.Value.(string)
		if !ok {
			src = fmt.Sprint(it.Value)
		}
		if _, err := b.f.compile(b.path+"."+name, src, b.in); err != nil {
			return core.OperatorDef{}, err
		}
		mfs = append(mfs, ops.MapField{Name: name, Expr: src})
	}
	return ops.Map(b.name, mfs, true, b.in, b.errs)
}
