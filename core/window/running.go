package window

import (
	"unsafe"

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

// running is one key's accumulators: in place (inl) for up to inlineAccs
// aggregates, so that a key is one block of memory; in ext otherwise.
type running struct {
	key  tuple
	next *running
	ext  []acc
	inl  [inlineAccs]acc
}

// newRunning returns the empty state of key k.
func (r *runningOp) newRunning(k tuple, next *running) *running {
	st := &running{key: k, next: next}
	if len(r.aggs) > inlineAccs {
		st.ext = make([]acc, len(r.aggs))
	}
	return st
}

// accs returns st's accumulators, one per aggregate.
func (r *runningOp) accs(st *running) []acc {
	if st.ext != nil {
		return st.ext
	}
	return st.inl[:len(r.aggs)]
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
		return &runningOp{spec: spec, key: key, aggs: aggs, out: out, state: state, env: env, sizes: newBlockSizes(spec.Groups)}, nil
	}}, nil
}

type runningOp struct {
	core.Base
	spec  RunningSpec
	key   keyDef
	aggs  []bound
	out   *core.Schema
	state *kvstate.Map[uint64, running]
	env   core.Env
	snap  *core.GroupSnapshot // a copy-on-write snapshot in flight, or nil
	sizes *blockSizes         // what each key group took in the last snapshot (a buffer size hint)
	bufs  core.GroupBuffers   // the released snapshots' buffers, reused by the next
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
		for st != nil && !r.key.equal(&st.key, &k) {
			st = st.next
		}
		if st == nil {
			st = r.newRunning(k, r.state.Get(g, h))
			r.state.Put(g, h, st)
		}
		accs := r.accs(st)
		if _, err := addAll(r.aggs, accs, row); err != nil {
			if perr := r.env.Errors.BadSeq(r.spec.Name, in.Pos[i], seqOf(in, i), describe(in.Schema, row), err); perr != nil {
				return perr
			}
		}
		if err := overflow(r.aggs, accs); err != nil {
			// No row for this record: its key's state stays exact, and a
			// later record may bring the sum back into range.
			if perr := r.env.Errors.BadSeq(r.spec.Name, in.Pos[i], seqOf(in, i), describeRow(r.out, k[:nk], r.aggs, accs), err); perr != nil {
				return perr
			}
			continue
		}
		o := out.Append(in.Seq[i], in.Hash[i], in.Time[i], in.Pos[i])
		copy(o, k[:nk])
		for a := range r.aggs {
			o[nk+a] = r.aggs[a].result(&accs[a])
		}
	}
	return nil
}

// GroupBytes implements core.StateSizer: the keys of group g times one
// key's state and its map slot (an estimate: string keys' bytes and
// out-of-line accumulators are not counted).
func (r *runningOp) GroupBytes(g int) int64 {
	return int64(r.state.Len(g)) * int64(unsafe.Sizeof(running{})+16)
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
