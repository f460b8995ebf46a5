package jobfile

import (
	"streamd/core"
	"streamd/core/ops"
)

// filter: delay > 15 keeps the records for which the condition is true
// (ops.Filter).
func init() {
	registerOp(opEntry[*string]{name: "filter", rank: 10, build: buildFilter})
}

// buildFilter compiles the condition to report errors at their position
// in the file.
func buildFilter(b *opBuild, cond *string) (core.OperatorDef, error) {
	if _, err := b.f.compile(b.path, *cond, b.in); err != nil {
		return core.OperatorDef{}, err
	}
	return ops.Filter(b.name, *cond, b.in, b.errs)
}
