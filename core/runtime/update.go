package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"streamd/core"
	"streamd/core/plan"
	"streamd/core/runtime/logic"
	"streamd/snapshot"
)

// Change of logic (docs/ARCHITECTURE.md, "Change of logic"): Live.Update
// replaces one stateless operator's definition in the running job at one
// sync point, a sequence number s: every record before s went through the
// old logic, every record after it goes through the new one, in every
// stage that runs an instance of the operator. The protocol's decisions
// are core/runtime/logic's (a deterministic state machine with script
// tests): which update is refused (logic.Check), its epoch and sync point
// (logic.Log, run.logic), which marker a stage meets and whether it swaps
// (logic.Follower); this file and the loops drive it.
//
//   - The routing goroutine takes the request between batches (single
//     source stage) or places it before a block no source worker has
//     started (exchange.go: the pending slot a barrier would take).
//   - Pre-region operators are replaced there: on the single source stage
//     at once, by each source worker when it starts its first block at or
//     after the sync block (logic.Log.Due).
//   - An Update marker, routed like a barrier, reaches every channel after
//     every record before s: a channel meets it when it pops it, and
//     replaces its instance of a region operator. The merger, once every
//     channel has delivered it (aligned by sequence number), hands it to
//     the output workers, which meet it and replace their post-region
//     instances. Every stage meets every update's marker, in epoch order.
//   - Definitions kept for stages started later (channels and workers a
//     live change adds) are replaced when the update is placed, copy on
//     write: a stage started for an earlier routing keeps the slice it
//     was given and meets the marker; one started after starts at the
//     update's epoch (logic.Log.Follow) and never meets it.
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

// update is one change of logic: the protocol's update (its epoch,
// operator, sync point and entry; core/runtime/logic), with the definition
// its instances take. Read-only once placed.
type update struct {
	logic.Update
	def core.OperatorDef
	// retune: the operator keeps its instances, which take def's settings
	// at the sync point (core.Retuner); otherwise they are replaced by
	// instances of def.
	retune bool
}

func (u *update) outcome() Outcome {
	return Outcome{Seq: u.Seq, Position: u.Position, Inputs: map[string]string{"operator": u.Name, "stage": u.Stage.String()}}
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
	u.Body = body
	return l.request(ctx, &ctlRequest{kind: KindUpdate, upd: u, reason: reason, inputs: in})
}

// locate finds the operator an update targets and checks the new
// definition against it (logic.Check).
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
			u := &update{Update: logic.Update{Op: logic.Op{Name: name, Stage: logic.Stage(s), Index: i}}}
			mode, err := logic.Check(name, logicDef(old), logicDef(def))
			if err != nil {
				return nil, refused("%v", err)
			}
			if mode == logic.Retune {
				// A keyed operator that takes new settings in place (a
				// window's allowed lateness): its instances keep their state.
				next, err := old.Retune(def)
				if err != nil {
					return nil, refused("%v", err)
				}
				def, u.retune = next, true
			}
			def.Name = old.Name
			u.def = def
			return u, nil
		}
	}
	var names []string
	for _, defs := range stages {
		for _, d := range defs {
			names = append(names, d.Name)
		}
	}
	return nil, refused("no operator named %q (the job has %s)", name, strings.Join(names, ", "))
}

// logicDef is what logic.Check needs of d.
func logicDef(d core.OperatorDef) logic.Def {
	ld := logic.Def{State: d.State, Partial: d.Partial != nil, Retune: d.Retune != nil}
	if d.Out != nil {
		ld.Out = d.Out.String()
		var sh strings.Builder
		for _, f := range d.Out.Fields {
			sh.WriteString(f.Name)
			sh.WriteByte(0)
			sh.WriteString(f.Type.String())
			sh.WriteByte(0)
		}
		ld.Shape = sh.String()
	}
	return ld
}

// place places u at sync point at (the routing goroutine; x.mu held
// with source workers): the log gives it its epoch (logic.Log.Place), the
// barriers placed from now on record it (updatesText), and the lists that
// stages started from now on instantiate (source workers, channels; the
// post-region instances are made once) take its definition, copy on
// write. Job's lists stay as built: reports read them.
func (r *run) place(u *update, at logic.Point) error {
	placed, err := r.logic.Place(u.Op, u.Body, at)
	if err != nil {
		return err
	}
	u.Update = placed
	r.updates = append(r.updates, u)
	if b, err := json.Marshal(r.logic.Records()); err == nil {
		r.updatesText = string(b)
	}
	switch u.Stage {
	case logic.Pre:
		r.preDefs = slices.Clone(r.preDefs)
		r.preDefs[u.Index] = u.def
	case logic.Region:
		r.chanOps = slices.Clone(r.chanOps)
		r.chanOps[u.Index] = u.def
	}
	return nil
}

// meet is a stage at update u's marker (a source worker: at u's block),
// on the stage's goroutine: its follower moves to u's epoch and, when u
// targets the stage, its instances take u (applyUpdate). It says whether
// they did (the stage then rebuilds its chain).
func meet(f *logic.Follower, insts []instance, u *update, env core.Env) (bool, error) {
	swap, err := f.Meet(u.Update)
	if err != nil || !swap {
		return false, err
	}
	return true, applyUpdate(insts, u, env)
}

// applyUpdate carries out u on a stage's instances (on the stage's
// goroutine, at the sync point): instance u.index takes u.def's settings
// (retune) or is replaced by a new instance of u.def.
func applyUpdate(insts []instance, u *update, env core.Env) error {
	if !u.retune {
		return swapInstance(insts, u.Index, u.def, env)
	}
	rt, ok := insts[u.Index].op.(core.Retuner)
	if !ok {
		return fmt.Errorf("update %s: its instances cannot take new settings", u.def.Name)
	}
	if err := rt.Retune(u.def); err != nil {
		return fmt.Errorf("update %s: %w", u.def.Name, err)
	}
	insts[u.Index].def = u.def
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
//
// Deprecated: use plan.UpdateRecord.
type UpdateRecord = plan.UpdateRecord

// UpdatesExtra is plan.UpdatesExtra.
const UpdatesExtra = plan.UpdatesExtra

// RestoredUpdates is plan.RestoredUpdates.
func RestoredUpdates(meta *snapshot.Metadata) ([]UpdateRecord, error) {
	return plan.RestoredUpdates(meta)
}
