package jobfile

import (
	"streamd/core"
	"streamd/core/ops"
)

// filter: delay > 15 keeps the records for which the condition is true
// (ops.FilterProgram).
func init() {
	registerOp(opEntry[*string]{name: "filter", rank: 10, build: buildFilter})
}

// buildFilter compiles the condition once: the program that reports
// errors at their position in the file is the one every channel runs.
func buildFilter(b *opBuild, cond *string) (core.OperatorDef, error) {
	p, err := b.f.compile(b.path, *cond, b.in)
	if err != nil {
		return core.OperatorDef{}, err
	}
	return ops.FilterProgram(b.name, p, nil)
}
