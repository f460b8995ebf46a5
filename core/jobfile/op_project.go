package jobfile

import (
	"regexp"
	"strings"

	"streamd/core"
	"streamd/core/ops"
)

// project: [field, field as name, …] keeps, orders and renames fields
// (ops.ProjectColumns).
func init() {
	registerOp(opEntry[[]string]{name: "project", rank: 30, build: buildProject})
}

func buildProject(b *opBuild, fields []string) (core.OperatorDef, error) {
	cols := make([]ops.Column, len(fields))
	for i, c := range fields {
		cols[i].From, cols[i].As = splitAs(c)
	}
	return ops.ProjectColumns(b.name, cols, b.in)
}

var asRe = regexp.MustCompile(`^\s*(\S+)\s+as\s+(\S+)\s*$`)

// splitAs splits "column as name" (project, lookup_csv's fields); a plain
// "column" has no name.
func splitAs(s string) (string, string) {
	if m := asRe.FindStringSubmatch(s); m != nil {
		return m[1], m[2]
	}
	return strings.TrimSpace(s), ""
}
