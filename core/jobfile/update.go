package jobfile

import (
	"fmt"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"

	"streamd/core"
	"streamd/core/plan"
)

// BuildUpdate builds the new definition of the operator named name (its
// name:, or its path such as region.ops[0].filter) of job, which f built,
// from body: the operator's entry as the job file would write it, in YAML
// or JSON (`filter: value < 500`, `{"map": {"y": "value * 3"}}`). The body
// is checked as a job file's entry is: unknown keys, an operator of
// another kind, expressions that do not type-check against the operator's
// input. Errors are *Error values whose File is source (the request, for
// the control plane) and whose Line and Column are in body. Whether the
// running job can take the definition (a stateless operator, the same
// output schema, a window's Retune) is runtime.Live.Update's to say. A
// keyed operator is refused here already, with its state layout before and
// after, except a window whose update changes nothing but its
// allowed_lateness; a window update that changes another setting is
// refused naming it.
func (f *File) BuildUpdate(job *plan.Job, name string, body []byte, source string) (core.OperatorDef, error) {
	var none core.OperatorDef
	type entry struct {
		path string
		spec *OpSpec
		in   *core.Schema
		reg  *plan.Region
		old  core.OperatorDef
	}
	var found *entry
	var names []string
	look := func(stage string, specs []OpSpec, defs []core.OperatorDef, in *core.Schema, reg *plan.Region) {
		for i := range specs {
			if i >= len(defs) {
				return
			}
			p := fmt.Sprintf("%s[%d]", stage, i)
			k, _, ok := opKinds.chosen(specs[i].ops)
			n := specs[i].Name
			if n == "" && ok {
				n = p + "." + k.name
			}
			names = append(names, n)
			if found == nil && (n == name || (ok && p+"."+k.name == name)) {
				found = &entry{path: p, spec: &specs[i], in: in, reg: reg, old: defs[i]}
			}
			in = defs[i].Out
		}
	}
	in := job.Source.Schema()
	look("pipeline", f.Spec.Pipeline, job.Pre, in, nil)
	if len(job.Pre) > 0 {
		in = job.Pre[len(job.Pre)-1].Out
	}
	if r := f.Spec.Region; r != nil && job.Region != nil {
		look("region.ops", r.Ops, job.Region.Ops, in, job.Region)
		if len(job.Region.Ops) > 0 {
			in = job.Region.Ops[len(job.Region.Ops)-1].Out
		}
	}
	look("post", f.Spec.Post, job.Post, in, nil)
	if found == nil {
		return none, fmt.Errorf("%w: no operator named %q (the job has %s)", plan.ErrRefused, name, strings.Join(names, ", "))
	}
	oldKind, _, _ := opKinds.chosen(found.spec.ops)

	// The body as a file of its own: positions are the body's.
	g := &File{Path: source, Dir: f.Dir, Spec: f.Spec, text: string(body), root: opKinds.entryType(oldKind.name)}
	if strings.TrimSpace(g.text) == "" {
		return none, &Error{File: source, Msg: fmt.Sprintf("empty update (expected the operator's entry, e.g. %s: …)", oldKind.name)}
	}
	var err error
	if g.ast, err = parser.ParseBytes(body, 0); err != nil {
		return none, g.yamlError(err)
	}
	for _, d := range g.ast.Docs {
		if err := g.checkTags(d.Body, ""); err != nil {
			return none, err
		}
	}
	var spec OpSpec
	if err := g.decodeInto(&spec); err != nil {
		return none, err
	}
	k, v, err := opKinds.choose(g, "", spec.ops, false)
	if err != nil {
		return none, err
	}
	if k.name != oldKind.name {
		return none, g.errAt(k.name, "operator %s is a %s: an update gives its %s: entry, not a %s (an update replaces logic, not the operator)", name, oldKind.name, oldKind.name, k.name)
	}
	if spec.Name != "" && spec.Name != name && spec.Name != found.old.Name {
		return none, g.errAt("name", "the update is for %s; an update cannot rename it", name)
	}
	b := &opBuild{keyAt: keyAt{g, k.name}, name: found.old.Name, in: found.in, region: found.reg}
	def, err := k.build(b, v)
	if err != nil {
		if _, ok := err.(*Error); ok {
			return none, err
		}
		msg := strings.TrimPrefix(err.Error(), k.name+" "+b.name+": ")
		return none, g.errAt(k.name, "%s", strings.TrimPrefix(msg, b.name+": "))
	}
	if k.keyed {
		if k.name == "window" {
			_, was, _ := opKinds.chosen(found.spec.ops)
			ow, nw := was.(*WindowSpec), v.(*WindowSpec)
			oldKey, _ := (&opBuild{keyAt: keyAt{f, found.path}, region: found.reg}).groupKey(ow.Key)
			nextKey, _ := b.groupKey(nw.Key)
			if c := windowChange(ow, nw, oldKey, nextKey, found.old.State, def.State); c != "" {
				return none, fmt.Errorf("%w: window %s keeps keyed state; this update would change its state layout or input: %s; an update of a running window may change only allowed_lateness", plan.ErrRefused, name, c)
			}
			return def, nil // the runtime's Retune takes it in place
		}
		if def.State != found.old.State {
			return none, fmt.Errorf("%w: operator %s keeps keyed state; this update would change its state layout (%s → %s), which a running job cannot convert: only stateless operators (filter, map) and a window's allowed_lateness can be updated", plan.ErrRefused, name, found.old.State, def.State)
		}
		return none, fmt.Errorf("%w: operator %s keeps keyed state (%s): only stateless operators (filter, map) and a window's allowed_lateness can be updated", plan.ErrRefused, name, def.State)
	}
	return def, nil
}

// decodeInto strictly decodes g's text into v, as decode does for a job
// file.
func (g *File) decodeInto(v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &Error{File: g.Path, Msg: fmt.Sprintf("cannot decode (YAML decoder: %v)", r)}
		}
	}()
	if err := yaml.UnmarshalWithOptions([]byte(g.text), v, yaml.DisallowUnknownField(), yaml.UseOrderedMap()); err != nil {
		return g.yamlError(err)
	}
	return nil
}

// applyRestoredUpdates builds again the changes of logic the checkpoint a
// job restores from recorded (plan.UpdatesExtra: the control plane's
// updates in force at its barrier) and puts them in place of the job
// file's definitions, so that the restored run goes on with the logic the
// crashed or stopped one had. A recorded update that no longer builds
// against this job file is an error naming it.
func (f *File) applyRestoredUpdates(job *plan.Job) error {
	if job.Checkpoint == nil || job.Checkpoint.Restore == nil {
		return nil
	}
	us, err := plan.RestoredUpdates(&job.Checkpoint.Restore.Meta)
	if err != nil {
		return err
	}
	for _, u := range us {
		def, err := f.BuildUpdate(job, u.Operator, []byte(u.Body), "checkpoint update of "+u.Operator)
		if err != nil {
			return fmt.Errorf("the checkpoint to restore was taken after an update of %s that this job file cannot take again: %w", u.Operator, err)
		}
		replaced := false
		for _, defs := range [][]core.OperatorDef{job.Pre, job.RegionOps(), job.Post} {
			for i := range defs {
				if defs[i].Name == u.Operator {
					def.Name = defs[i].Name
					defs[i] = def
					replaced = true
				}
			}
		}
		if !replaced {
			return fmt.Errorf("the checkpoint to restore was taken after an update of %s, which this job does not have", u.Operator)
		}
	}
	return nil
}
