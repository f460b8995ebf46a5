package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"streamd/core"
	"streamd/core/plan"
	"streamd/snapshot"
)

// Change of logic (docs/ARCHITECTURE.md, "Change of logic"): Live.Update
// replaces one stateless operator's definition in the running job at one
// sync point, a sequence number s: every record before s went through the
// old logic, every record after it goes through the new one, in every
// stage that runs an instance of the operator.
//
//   - The routing goroutine takes the request between batches (single
//     source stage) or places it before a block no source worker has
//     started (exchange.go: the pending slot a barrier would take).
//   - Pre-region operators are replaced there: on the single source stage
//     at once, by each source worker when it starts its first block at or
//     after the sync block (exchange.updates).
//   - An Update marker, routed like a barrier, reaches every channel after
//     every record before s: a channel replaces its instance of a region
//     operator when it pops the marker. The merger, once every channel has
//     delivered it (aligned by sequence number), hands it to the output
//     workers, which replace their post-region instances.
//   - Definitions kept for stages started later (channels and workers a
//     live change adds) are replaced when the update is placed, copy on
//     write: a stage started for an earlier routing keeps the slice it
//     was given and meets the marker.
//
// Operators without keyed state (OperatorDef.State empty, no Partial)
// can be replaced, with a definition of the same input and output schema:
// the schema every later operator was built for stays as it is. A keyed
// operator with OperatorDef.Retune (a window: its allowed lateness) keeps
// its instances and state: each instance takes the new settings at the
// sync point (core.Retuner), and stages started later instantiate the
// definition Retune returned, which shares the state store.
//
// Each output worker runs its own post-region instances
// (outputWorker.update): the merger hands the Update marker to every
// worker, in its place in the round-robin order (output.Push), and each
// replaces its instance when it pops it — after every batch the merger
// released before the sync point, before any released after it. Without
// output workers the merger hands the marker in its place to the one
// worker it runs inline.

// Stages an update can target.
const (
	stagePre = iota
	stageRegion
	stagePost
)

var stageNames = [...]string{"pre", "region", "post"}

// update is one change of logic, read-only once placed.
type update struct {
	name  string
	stage int
	index int
	def   core.OperatorDef
	// retune: the operator keeps its instances, which take def's settings
	// at the sync point (core.Retuner); otherwise they are replaced by
	// instances of def.
	retune bool
	// body is the operator's new entry as the request gave it (job-file
	// YAML or JSON), recorded by the checkpoints after the sync point so
	// that a restore runs with the logic in force at its barrier.
	body string
	// seq is the sync point's sequence number (the Update marker's),
	// position the input records before it (-1: unknown), block the
	// block it was placed before (source workers).
	seq      uint64
	position int64
	block    int
}

func (u *update) outcome() Outcome {
	return Outcome{Seq: u.seq, Position: u.position, Inputs: map[string]string{"operator": u.name, "stage": stageNames[u.stage]}}
}

// Update replaces the logic of the stateless operator named name (its
// name: in the job file, or its path) with def, built for the same input
// schema (the job loader builds it from the operator's new spec), and
// returns once the change is placed: Outcome.Seq is the sequence number of
// the sync point, Outcome.Position the input records before it (-1 when
// the source cannot say). Refused (ErrRefused, the job unchanged): an
// unknown operator, an operator with keyed state (its state layout would
// change), an operator that runs a pre-aggregation in every channel, a
// definition whose output schema differs, a job without a parallel
// region. A post-region operator is updated wherever it runs: on the
// merger or on the output workers.
//
// body is the new entry as written (the job loader's input to def): the
// checkpoints taken after the sync point record it (metadata extra
// "updates", see UpdatesExtra), and a restore from one of them builds the
// operator from it again (jobfile), so the restored run keeps the logic.
func (l Live) Update(ctx context.Context, name string, def core.OperatorDef, body, reason string) (Outcome, error) {
	r := l.r
	in := map[string]string{"operator": name}
	u, err := r.locate(name, def)
	if err != nil {
		return l.refuse(KindUpdate, reason, in, err)
	}
	u.body = body
	return l.request(ctx, &ctlRequest{kind: KindUpdate, upd: u, reason: reason, inputs: in})
}

// locate finds the operator an update targets and checks the new
// definition against it.
func (r *run) locate(name string, def core.OperatorDef) (*update, error) {
	if r.job.Region == nil {
		return nil, refused("update needs a parallel region: its sync point is a splitter sequence number")
	}
	stages := [][]core.OperatorDef{r.job.Pre, r.job.Region.Ops, r.job.Post}
	for s, defs := range stages {
		for i, old := range defs {
			if old.Name != name {
				continue
			}
			if old.State != "" && old.Retune != nil && def.State == old.State {
				// A keyed operator that takes new settings in place (a
				// window's allowed lateness): its instances keep their state.
				next, err := old.Retune(def)
				if err != nil {
					return nil, refused("%v", err)
				}
				next.Name = old.Name
				return &update{name: name, stage: s, index: i, def: next, retune: true}, nil
			}
			switch {
			case old.State != "" || def.State != "":
				return nil, refused("operator %s keeps keyed state (%s): an update would change its state layout, which a running job cannot convert; only stateless operators (filter, map) and a window's allowed lateness can be updated", name, cmpState(old.State, def.State))
			case old.Partial != nil:
				return nil, refused("operator %s runs a pre-aggregation in every channel: it cannot be updated", name)
			case !sameSchema(old.Out, def.Out):
				return nil, refused("operator %s: the update changes its output from %s to %s; every operator after it was built for the first", name, old.Out, def.Out)
			}
			def.Name = old.Name
			return &update{name: name, stage: s, index: i, def: def}, nil
		}
	}
	var names []string
	for _, defs := range stages {
		for _, d := range defs {
			names = append(names, d.Name)
		}
	}
	return nil, refused("no operator named %q (the job has %s)", name, stringsJoin(names))
}

func cmpState(old, next string) string {
	if next == "" || next == old {
		return old
	}
	return old + " → " + next
}

func stringsJoin(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ", "
		}
		out += v
	}
	return out
}

// sameSchema says whether a and b have the same fields, names and types.
func sameSchema(a, b *core.Schema) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil || len(a.Fields) != len(b.Fields) {
		return false
	}
	for i := range a.Fields {
		if a.Fields[i].Name != b.Fields[i].Name || a.Fields[i].Type != b.Fields[i].Type {
			return false
		}
	}
	return true
}

// commitUpdate replaces u's definition in the lists that stages started
// from now on instantiate (source workers, channels; the post-region
// instances are made once), copy on write (routing goroutine; x.mu held
// with source workers). Job's lists stay as built: reports read them.
func (r *run) commitUpdate(u *update) {
	r.updateLog = append(slices.DeleteFunc(slices.Clone(r.updateLog), func(e UpdateRecord) bool { return e.Operator == u.name }),
		UpdateRecord{Operator: u.name, Body: u.body})
	if b, err := json.Marshal(r.updateLog); err == nil {
		r.updatesText = string(b)
	}
	switch u.stage {
	case stagePre:
		r.preDefs = slices.Clone(r.preDefs)
		r.preDefs[u.index] = u.def
	case stageRegion:
		r.chanOps = slices.Clone(r.chanOps)
		r.chanOps[u.index] = u.def
	}
}

// applyUpdate carries out u on a stage's instances (on the stage's
// goroutine, at the sync point): instance u.index takes u.def's settings
// (retune) or is replaced by a new instance of u.def.
func applyUpdate(insts []instance, u *update, env core.Env) error {
	if !u.retune {
		return swapInstance(insts, u.index, u.def, env)
	}
	rt, ok := insts[u.index].op.(core.Retuner)
	if !ok {
		return fmt.Errorf("update %s: its instances cannot take new settings", u.def.Name)
	}
	if err := rt.Retune(u.def); err != nil {
		return fmt.Errorf("update %s: %w", u.def.Name, err)
	}
	insts[u.index].def = u.def
	return nil
}

// swapInstance replaces instance i of a stage with a new instance of def
// (on the stage's goroutine, between batches) and closes the old one.
func swapInstance(insts []instance, i int, def core.OperatorDef, env core.Env) error {
	op, err := def.New(env)
	if err != nil {
		return fmt.Errorf("update %s: %w", def.Name, err)
	}
	old := insts[i].op
	insts[i] = instance{def: def, op: op, counters: insts[i].counters}
	if c, ok := old.(core.Closer); ok {
		if err := c.Close(); err != nil {
			return fmt.Errorf("update %s: close the old instance: %w", def.Name, err)
		}
	}
	return nil
}

// updateOf is the update an Update marker carries (nil for any other
// batch).
func updateOf(b *core.Batch) *update {
	u, _ := b.Control.(*update)
	return u
}

// UpdateRecord is plan.UpdateRecord.
type UpdateRecord = plan.UpdateRecord

// UpdatesExtra is plan.UpdatesExtra.
const UpdatesExtra = plan.UpdatesExtra

// RestoredUpdates is plan.RestoredUpdates.
func RestoredUpdates(meta *snapshot.Metadata) ([]UpdateRecord, error) {
	return plan.RestoredUpdates(meta)
}
