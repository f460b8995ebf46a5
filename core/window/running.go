package window

import (
	"streamd/core"
	"streamd/kvstate"
)

// RunningSpec describes a keyed running aggregate: for every input record,
// the key's aggregates over all its records so far (Flink's
// keyBy().reduce()).
type RunningSpec struct {
	Name   string
	Key    []string
	Aggs   []Agg
	Groups int
}

type running struct {
	key  tuple
	next *running
	accs []acc
}

// NewRunning binds a running aggregate to its input schema. Output schema:
// the key fields, then one field per aggregate; one output record per input
// record, with the input's sequence number, so the region's output order is
// the input order.
func NewRunning(spec RunningSpec, in *core.Schema) (core.OperatorDef, error) {
	ka, err := bindKeyedAgg(spec.Name, spec.Groups, spec.Key, spec.Aggs, in)
	if err != nil {
		return core.OperatorDef{}, err
	}
	spec.Groups = ka.groups
	key, aggs, out := ka.key, ka.aggs, ka.out
	state := kvstate.NewMap[uint64, running](spec.Groups)
	return core.OperatorDef{Name: spec.Name, Out: out, State: "aggregate " + ka.describe(spec.Aggs), New: func(env core.Env) (core.Operator, error) {
		return &runningOp{spec: spec, key: key, aggs: aggs, state: state, env: env, sizes: make([]int32, spec.Groups)}, nil
	}}, nil
}

type runningOp struct {
	core.Base
	spec  RunningSpec
	key   keyDef
	aggs  []bound
	state *kvstate.Map[uint64, running]
	env   core.Env
	snap  *core.GroupSnapshot // a copy-on-write snapshot in flight, or nil
	sizes []int32             // bytes each key group took in the last snapshot (a buffer size hint)
}

func (r *runningOp) Process(in *core.Batch, out *core.Emitter) error {
	nk := len(r.key.idx)
	for i := 0; i < in.Len; i++ {
		row := in.Row(i)
		h := in.Hash[i]
		g := kvstate.KeyGroup(h, r.spec.Groups)
		if r.snap != nil {
			if r.snap.Finished() {
				r.snap = nil
			} else {
				r.snap.Touch(g)
			}
		}
		k := r.key.of(row)
		st := r.state.Get(g, h)
		for st != nil && st.key != k {
			st = st.next
		}
		if st == nil {
			st = &running{key: k, next: r.state.Get(g, h), accs: make([]acc, len(r.aggs))}
			r.state.Put(g, h, st)
		}
		for a := range r.aggs {
			if err := r.aggs[a].add(&st.accs[a], row); err != nil {
				if perr := r.env.Errors.Bad(r.spec.Name, in.Pos[i], describe(in.Schema, row), err); perr != nil {
					return perr
				}
			}
		}
		o := out.Append(in.Seq[i], in.Hash[i], in.Time[i], in.Pos[i])
		copy(o, k[:nk])
		for a := range r.aggs {
			o[nk+a] = r.aggs[a].result(&st.accs[a])
		}
	}
	return nil
}

// ReleaseGroups implements core.Migrator: the running aggregate keeps no
// per-instance data, but a snapshot in flight must finish the groups
// before their new owner changes them.
func (r *runningOp) ReleaseGroups(groups []int) any {
	if r.snap != nil {
		r.snap.TouchGroups(groups)
	}
	return nil
}

// AdoptGroups implements core.Migrator.
func (r *runningOp) AdoptGroups([]int, any) {}
