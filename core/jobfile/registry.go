package jobfile

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"streamd/core"
	"streamd/core/plan"
)

// The registry holds every operator, source and sink kind a job file can
// name. Each kind is one entry, registered from an init function in the
// file that builds it (op_filter.go, source_csv.go, sink_csv.go, …):
//
//   - its job-file key (filter, csv, …) and rank (its place where the
//     kinds are listed: "expected one of …" and the keys an unknown key is
//     told about; the kinds of the first version have ranks 10, 20, …);
//   - the Go type its value decodes into (*string, yaml.MapSlice,
//     *WindowSpec, …), from which the loader builds the struct type a list
//     entry, source: or sink: decodes into, so that unknown keys and values
//     of the wrong type are refused with their position as for any other
//     key;
//   - its builder: the decoded value and where it sits in the file (an
//     opBuild, a sourceBuild, a sinkBuild) → core.OperatorDef, core.Source
//     or core.Sink;
//   - what checkpoints depend on: whether an operator is keyed (it keeps
//     keyed state, belongs in a region with key_by and describes that state
//     in OperatorDef.State); how a source or sink describes itself in a
//     checkpoint (describe), whether a source can be replayed, and which
//     checkpoint positions it can resume from (fits).
//
// Adding an operator is one new file with its spec type, its builder and
// its registration, plus its section in docs/JOB.md. Kinds are registered
// before main runs; the registry is sealed (sorted, checked, its struct
// type built) the first time a job file is decoded, and registering after
// that panics.

// kind is what entries of the three registries have in common.
type kind struct {
	// name is the job-file key: "filter", "csv".
	name string
	// rank orders the kinds of a registry: in messages that list them and
	// in the struct type their values decode into. Ranks are unique
	// within a registry.
	rank int
	// spec is the Go type the key's value decodes into: a pointer, a slice
	// or a map, nil when the key is absent.
	spec reflect.Type
	// weak, if set, says whether a use of the kind (its decoded value)
	// puts the job outside the strong determinism promise: why, and the
	// key under the kind's that does ("" for the kind itself); why is ""
	// when the use keeps the promise (determinism.go).
	weak func(spec any) (sub, why string)
}

func (k *kind) base() *kind { return k }

// opKind is an operator kind: a key of an entry of pipeline, region.ops or
// post.
type opKind struct {
	kind
	// keyed: the operator keeps keyed state in checkpoints. It may only
	// run in a region with key_by, and its OperatorDef.State must describe
	// that state (a checkpoint records it and a restore compares it); an
	// operator that is not keyed has an empty State.
	keyed bool
	build func(b *opBuild, spec any) (core.OperatorDef, error)
}

// sourceKind is a source kind: a key of source:.
type sourceKind struct {
	kind
	replayable bool
	build      func(b *sourceBuild, spec any) (core.Source, error)
	describe   func(spec any) any
	fits       func(spec any, position int64) error
}

// sinkKind is a sink kind: a key of sink:.
type sinkKind struct {
	kind
	build    func(b *sinkBuild, spec any) (core.Sink, error)
	describe func(spec any, resolve func(string) string) any
	output   func(spec any) Output
}

// opEntry registers an operator kind (registerOp) whose value decodes into
// S: a pointer, a slice or a map (nil when the key is absent).
type opEntry[S any] struct {
	name  string
	rank  int
	keyed bool // see opKind.keyed
	// build makes the operator definition. An error that is not an *Error
	// is the operator constructor's: it is reported at the kind's key,
	// without the "kind name: " or "name: " it starts with.
	build func(b *opBuild, spec S) (core.OperatorDef, error)
	// weak, if set: see kind.weak.
	weak func(spec S) (sub, why string)
}

// sourceEntry registers a source kind (registerSource) whose value decodes
// into *T: a key with no value (`stdin:`) is a zero T.
type sourceEntry[T any] struct {
	name string
	rank int
	// replayable: the source can be read again from a checkpoint's
	// position. Checkpoints refuse a source that cannot (stdin).
	replayable bool
	build      func(b *sourceBuild, spec *T) (core.Source, error)
	// describe returns the settings a checkpoint records for the source
	// (rendered as JSON under its name, plan.Checkpointing.Source):
	// without what a restored run may change, defaults written out, so
	// that writing a default out is no change; it may add what the spec
	// does not say but the records depend on (the generator's algorithm).
	// Nil: the spec as written.
	describe func(spec T) any
	// fits, if set, refuses a checkpoint position the source cannot
	// resume from with these settings (a generator whose count is below
	// it).
	fits func(spec *T, position int64) error
	// weak, if set: see kind.weak.
	weak func(spec *T) (sub, why string)
}

// sinkEntry registers a sink kind (registerSink) whose value decodes into
// *T: a key with no value (`discard:`) is a zero T.
type sinkEntry[T any] struct {
	name  string
	rank  int
	build func(b *sinkBuild, spec *T) (core.Sink, error)
	// describe returns the settings a checkpoint records for the sink
	// (plan.Checkpointing.Sink): defaults written out, file paths made
	// absolute with resolve. Nil: the spec as written.
	describe func(spec T, resolve func(string) string) T
	// output, if set, names the file or the directory of parts the sink
	// writes, its path as the job file gives it (File.Outputs resolves
	// it). Nil: the sink writes no file (stdout, discard).
	output func(spec *T) Output
	// weak, if set, says whether the sink, as configured, writes again
	// after a restore what it wrote after the checkpoint (see kind.weak):
	// Promise asks it only when the job checkpoints, since without
	// checkpoints there is no restore.
	weak func(spec *T) (sub, why string)
}

var (
	opKinds = &registry[*opKind]{role: "operator", common: []reflect.StructField{
		{Name: "Name", Type: reflect.TypeFor[string](), Tag: `yaml:"name"`}}}
	sourceKinds = &registry[*sourceKind]{role: "source", common: []reflect.StructField{
		{Name: "Parallelism", Type: reflect.TypeFor[int](), Tag: `yaml:"parallelism"`}}}
	sinkKinds = &registry[*sinkKind]{role: "sink"}
)

func registerOp[S any](e opEntry[S]) {
	t := reflect.TypeFor[S]()
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
	default:
		panic(fmt.Sprintf("jobfile: operator %q: spec type %s is not a pointer, slice or map", e.name, t))
	}
	k := &opKind{
		kind:  kind{name: e.name, rank: e.rank, spec: t},
		keyed: e.keyed,
		build: func(b *opBuild, spec any) (core.OperatorDef, error) { return e.build(b, spec.(S)) },
	}
	if e.weak != nil {
		k.weak = func(spec any) (string, string) { return e.weak(spec.(S)) }
	}
	opKinds.add(k)
}

func registerSource[T any](e sourceEntry[T]) {
	k := &sourceKind{
		kind:       kind{name: e.name, rank: e.rank, spec: reflect.TypeFor[*T]()},
		replayable: e.replayable,
		build:      func(b *sourceBuild, spec any) (core.Source, error) { return e.build(b, spec.(*T)) },
		describe:   func(spec any) any { return spec },
	}
	if e.describe != nil {
		k.describe = func(spec any) any { return e.describe(*spec.(*T)) }
	}
	if e.fits != nil {
		k.fits = func(spec any, position int64) error { return e.fits(spec.(*T), position) }
	}
	if e.weak != nil {
		k.weak = func(spec any) (string, string) { return e.weak(spec.(*T)) }
	}
	sourceKinds.add(k)
}

func registerSink[T any](e sinkEntry[T]) {
	k := &sinkKind{
		kind:     kind{name: e.name, rank: e.rank, spec: reflect.TypeFor[*T]()},
		build:    func(b *sinkBuild, spec any) (core.Sink, error) { return e.build(b, spec.(*T)) },
		describe: func(spec any, _ func(string) string) any { return spec },
	}
	if e.describe != nil {
		k.describe = func(spec any, resolve func(string) string) any { return e.describe(*spec.(*T), resolve) }
	}
	if e.output != nil {
		k.output = func(spec any) Output { return e.output(spec.(*T)) }
	}
	if e.weak != nil {
		k.weak = func(spec any) (string, string) { return e.weak(spec.(*T)) }
	}
	sinkKinds.add(k)
}

// registry is the kinds of one role, and the struct type a mapping that
// names one of them decodes into: a field per kind, by rank, tagged with
// its name (after name:, for operators).
type registry[K interface{ base() *kind }] struct {
	role string
	// common are the keys every mapping of this role may hold besides its
	// kind (an operator's name:, a source's parallelism:), first in the
	// shape.
	common []reflect.StructField

	mu     sync.Mutex
	kinds  []K
	sealed bool
	shape  reflect.Type
}

func (r *registry[K]) add(k K) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sealed {
		panic(fmt.Sprintf("jobfile: %s %q registered after the registry was first used", r.role, k.base().name))
	}
	r.kinds = append(r.kinds, k)
}

// seal sorts and checks the kinds and builds the shape, once.
func (r *registry[K]) seal() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sealed {
		return
	}
	r.sealed = true
	slices.SortFunc(r.kinds, func(a, b K) int { return a.base().rank - b.base().rank })
	fields := slices.Clone(r.common)
	seen := map[string]bool{}
	for i, k := range r.kinds {
		b := k.base()
		switch {
		case b.name == "" || b.name == "name" || strings.ContainsAny(b.name, "\" .[]"):
			panic(fmt.Sprintf("jobfile: %s kind %q: not a usable job-file key", r.role, b.name))
		case seen[b.name]:
			panic(fmt.Sprintf("jobfile: %s %q registered twice", r.role, b.name))
		case i > 0 && r.kinds[i-1].base().rank == b.rank:
			panic(fmt.Sprintf("jobfile: %ss %q and %q have the same rank %d", r.role, r.kinds[i-1].base().name, b.name, b.rank))
		}
		seen[b.name] = true
		fields = append(fields, reflect.StructField{Name: "K_" + b.name, Type: b.spec, Tag: reflect.StructTag(`yaml:"` + b.name + `"`)})
	}
	r.shape = reflect.StructOf(fields)
}

// all returns the kinds by rank.
func (r *registry[K]) all() []K {
	r.seal()
	return r.kinds
}

// shapeType is the struct type a mapping naming one of the kinds decodes
// into.
func (r *registry[K]) shapeType() reflect.Type {
	r.seal()
	return r.shape
}

// entryType is the shape of a mapping that names kind name only: the
// keys common to the role (name) and the kind's own. An update of an
// operator gives an entry of its kind, so an unknown key's error lists
// those keys, not every kind's.
func (r *registry[K]) entryType(name string) reflect.Type {
	shape := r.shapeType()
	fields := slices.Clone(r.common)
	if f, ok := fieldByKey(shape, name); ok {
		f.Index, f.Offset = nil, 0
		fields = append(fields, f)
	}
	return reflect.StructOf(fields)
}

// names lists the kinds' job-file keys by rank.
func (r *registry[K]) names() []string {
	var names []string
	for _, k := range r.all() {
		names = append(names, k.base().name)
	}
	return names
}

// choice is a decoded mapping that names kinds of a registry: a value of
// the registry's shape, or the zero choice when the mapping is absent.
type choice struct {
	v reflect.Value // addressable; invalid when nothing was decoded
}

// decode decodes through unmarshal (the decoder's, so that positions,
// strictness and anchors are its own) into a new value of r's shape.
func (r *registry[K]) decode(unmarshal func(any) error) (choice, error) {
	p := reflect.New(r.shapeType())
	if err := unmarshal(p.Interface()); err != nil {
		return choice{}, err
	}
	return choice{v: p.Elem()}, nil
}

// field is the value of kind i (by rank) in c; invalid for the zero
// choice.
func (r *registry[K]) field(c choice, i int) reflect.Value {
	if !c.v.IsValid() {
		return reflect.Value{}
	}
	i += len(r.common)
	return c.v.Field(i)
}

// chosen returns the first kind set in c (the one, once the build has
// checked that there is exactly one) and its value; ok is false if none
// is.
func (r *registry[K]) chosen(c choice) (k K, spec any, ok bool) {
	for i, k := range r.all() {
		if fv := r.field(c, i); fv.IsValid() && !fv.IsNil() {
			return k, fv.Interface(), true
		}
	}
	return k, nil, false
}

// choose returns the one kind set in c, which is at path in the file, and
// its value. With fill, a key present with no value (`stdin:`) names its
// kind, with a zero value (sources and sinks); without, such a key counts
// as absent (operators). No kind, or several, is an error that lists them.
func (r *registry[K]) choose(f *File, path string, c choice, fill bool) (K, any, error) {
	kinds := r.all()
	set := make([]bool, len(kinds))
	for i, k := range kinds {
		fv := r.field(c, i)
		if !fv.IsValid() {
			continue
		}
		if fill && fv.IsNil() && f.present(path+"."+k.base().name) {
			fv.Set(reflect.New(fv.Type().Elem()))
		}
		set[i] = !fv.IsNil()
	}
	i, err := exactlyOne(path, f, r.names(), set)
	if err != nil {
		var zero K
		return zero, nil, err
	}
	return kinds[i], r.field(c, i).Interface(), nil
}

func exactlyOne(path string, f *File, names []string, set []bool) (int, error) {
	idx := -1
	for i, s := range set {
		if !s {
			continue
		}
		if idx >= 0 {
			return -1, f.errAt(path, "has both %s and %s; expected exactly one of %s", names[idx], names[i], strings.Join(names, ", "))
		}
		idx = i
	}
	if idx < 0 {
		return -1, f.errAt(path, "expected one of %s", strings.Join(names, ", "))
	}
	return idx, nil
}

// keyAt is where a kind's key sits in a file: what a builder reports its
// errors at.
type keyAt struct {
	f *File
	// path is the kind's key: "region.ops[0].window", "source.csv".
	path string
}

// errAt returns an Error at sub (".size"; "" for the kind's key) below
// the kind's key.
func (k keyAt) errAt(sub, format string, args ...any) error {
	return k.f.errAt(k.path+sub, format, args...)
}

// opBuild is what an operator's builder is given: where the operator sits
// in the file, its input, and the job settings it may depend on.
type opBuild struct {
	keyAt
	// name is the operator's name: its name: or else path.
	name string
	in   *core.Schema
	// There is no error policy here: an operator reports bad records to
	// its instance's Env.Errors, the policy of the stage that runs it (a
	// source worker's or a channel's deferred one, so that its dead letters
	// are written in input order; docs/ARCHITECTURE.md, "Errors and
	// shutdown", dead letters in input order).
	// region is the parallel region the operator runs in; nil in pipeline
	// and post. A keyed operator always has one, with a key.
	region *plan.Region
}

// sourceBuild is what a source's builder is given.
type sourceBuild struct {
	keyAt
	errs *core.ErrorPolicy
	// validate: streamd validate builds the job (Options.Validate), and a
	// source must not consume input that cannot be read again (stdin).
	validate bool
	// info, if set, receives notes of the running source (a followed
	// file's rotation); Options.Info.
	info func(msg string)
}

// sinkBuild is what a sink's builder is given.
type sinkBuild struct {
	keyAt
	opt Options
	in  *core.Schema // the records the sink is given
}
