package jobfile

import (
	"errors"
	"fmt"

	"streamd/core"
	"streamd/core/source"
)

// UnionSpec is a union of sources with the same schema: a list whose
// entries are written as source: is (one kind each, with its keys), read
// as a block interleave (source.Union; docs/JOB.md, "union").
type UnionSpec []SourceSpec

// union: [{csv: …}, {parquet: …}, …] reads several replayable sources as
// one input (source.Union). Its entries take every key their kind takes
// under source:, except parallelism, which is the union's.
func init() {
	registerSource(sourceEntry[UnionSpec]{name: "union", rank: 60, replayable: true, build: buildUnion,
		describe: describeUnion, weak: unionWeak})
}

func buildUnion(b *sourceBuild, u *UnionSpec) (core.Source, error) {
	if len(*u) == 0 {
		return nil, b.errAt("", "a union needs a list of one source or more, e.g. [{csv: {path: a.csv}}, {csv: {path: b.csv}}]")
	}
	var srcs []core.Source
	var names []string
	closeAll := func() {
		for _, s := range srcs {
			s.Close()
		}
	}
	paths := map[string]int{}
	for i := range *u {
		at := fmt.Sprintf("%s[%d]", b.path, i)
		el := &(*u)[i]
		if el.Parallelism() != 0 {
			closeAll()
			return nil, b.f.errAt(at+".parallelism", "parallelism is the union's: give it as source.parallelism, beside union:")
		}
		k, spec, err := sourceKinds.choose(b.f, at, el.sources, true)
		if err != nil {
			closeAll()
			return nil, err
		}
		switch {
		case k.name == "union":
			closeAll()
			return nil, b.f.errAt(at+".union", "a union cannot hold a union: list all its inputs in one")
		case !k.replayable:
			closeAll()
			return nil, b.f.errAt(at+"."+k.name, "%s cannot join a union: a union interleaves the blocks of inputs that can be read again (files, a generator with a count); %s is a live input", k.name, k.name)
		}
		s, err := k.build(&sourceBuild{keyAt: keyAt{b.f, at + "." + k.name}, errs: b.errs, validate: b.validate}, spec)
		if err != nil {
			closeAll()
			return nil, err
		}
		srcs = append(srcs, s)
		name := inputPath(spec)
		if name == "" {
			name = fmt.Sprintf("union[%d]", i)
		}
		paths[name]++
		names = append(names, name)
	}
	for i, n := range names {
		if paths[n] > 1 { // the same file twice: name each by its place
			names[i] = fmt.Sprintf("%s (union[%d])", n, i)
		}
	}
	s, err := source.Union(srcs, names, b.errs)
	if err != nil {
		var ie *source.UnionInputError
		if errors.As(err, &ie) {
			return nil, b.errAt(fmt.Sprintf("[%d]", ie.Input), "%v", ie.Err)
		}
		return nil, b.errAt("", "%v", err)
	}
	return s, nil
}

// inputPath is a file source's path as the job file writes it; "" for
// other kinds.
func inputPath(spec any) string {
	switch s := spec.(type) {
	case *CSVSpec:
		return s.Path
	case *JSONLSpec:
		return s.Path
	case *JSONSpec:
		return s.Path
	case *ParquetSpec:
		return s.Path
	}
	return ""
}

// describeUnion is the union as a checkpoint records it: each input as
// its kind describes itself, in order.
func describeUnion(u UnionSpec) any {
	out := make([]map[string]any, len(u))
	for i, el := range u {
		if k, spec, ok := sourceKinds.chosen(el.sources); ok {
			out[i] = map[string]any{k.name: k.describe(spec)}
		}
	}
	return out
}

// unionWeak is the first input outside the strong promise, if any.
func unionWeak(u *UnionSpec) (string, string) {
	for i, el := range *u {
		k, spec, ok := sourceKinds.chosen(el.sources)
		if !ok || k.weak == nil {
			continue
		}
		if sub, why := k.weak(spec); why != "" {
			return fmt.Sprintf("[%d].%s%s", i, k.name, sub), why
		}
	}
	return "", ""
}
