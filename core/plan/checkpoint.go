package plan

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"streamd/core"
	"streamd/kvstate"
	"streamd/snapshot"
)

// Checkpointing configures asynchronous barrier snapshots (Carbone et al.,
// "Lightweight Asynchronous Snapshots for Distributed Dataflows", 2015):
// the source stage injects barrier n, every stateful operator snapshots its
// key groups as the barrier passes (the data path pauses only for that
// copy), the merger aligns the barrier across channels, and a coordinator
// goroutine writes the checkpoint and, once it is complete, lets the sink
// commit the epoch's output.
type Checkpointing struct {
	// Store holds the checkpoints. runtime.Run unlocks it when it returns (if
	// it was opened with snapshot.OpenLocked).
	Store *snapshot.Store
	// Interval is the time from the end of one checkpoint (complete, failed
	// or abandoned; the first: from the job's start) to the start of the
	// next, not their period: one checkpoint is in flight at a time, and the
	// next is due at the first source batch (or worker batch) read Interval
	// after the previous ended (the runtime's checkpointer.due).
	// EveryBatches, if > 0, injects a barrier every that many source batches
	// instead (deterministic, for tests).
	Interval     time.Duration
	EveryBatches int
	// Timeout, if > 0, abandons a checkpoint that every channel and the
	// sink have not acknowledged Timeout after its start (its barrier
	// injected, or requested in a block with source workers), e.g. behind
	// a slow sink or a stuck channel; the next one is due Interval after
	// that. Writing the files of an acknowledged checkpoint is not timed,
	// so a checkpoint's reported duration (start to commit) may exceed
	// Timeout. The coordinator looks every Timeout/4 (at least 1 ms, wall
	// time), so it abandons one between Timeout and 1.25 × Timeout after
	// its start.
	Timeout time.Duration
	// Now, if set, is the clock Interval and Timeout are measured by (nil:
	// time.Now). Tests script it, so that whether a barrier is due or a
	// checkpoint timed out does not depend on the machine's load; it is
	// called from the source stage (or workers, or channels at the end of the
	// input) and the coordinator goroutine, and buffer debloating measures
	// its consumers' throughput by it (the runtime's debloat.go) from every
	// stage that pushes to a ring: it must be safe for concurrent use.
	// Checkpoint durations in the report are wall time either way.
	Now func() time.Time
	// Source and Sink describe the job's source and sink in words (their
	// configuration, without what a restore may change: a record count, a
	// rate, a parsing parallelism). A checkpoint records them, and a
	// restore into a job whose source or sink differs is refused
	// (ErrCheckpointMismatch): the position would be a count of other
	// records, or the output parts of two formats would be joined. Empty:
	// not recorded, not checked.
	Source, Sink string
	// Restore, if set, is the checkpoint the job resumes from: sources
	// skip to their positions, key groups load into whatever channel count
	// the job starts with, and an EpochSink drops output of later epochs.
	Restore *snapshot.Checkpoint
}

// VerifyOutput checks the sink's committed output against checkpoint ck's
// manifest (OutputManifest). A checkpoint without one, or a sink that keeps
// none, passes.
func VerifyOutput(s core.Sink, ck *snapshot.Checkpoint) error {
	om, ok := s.(core.OutputManifest)
	if !ok {
		return nil
	}
	for _, f := range ck.Meta.Files {
		if f.Name == core.OutputManifestFile {
			m, err := ck.ReadFile(f.Name)
			if err != nil {
				return err
			}
			if err := om.VerifyOutput(m, ck.Meta.ID); err != nil {
				return fmt.Errorf("%s: %w", snapshot.Name(ck.Meta.ID), err)
			}
			return nil
		}
	}
	return nil
}

// ErrCheckpointMismatch: the checkpoint to restore was taken by a job whose
// region differs from this one's (other operators, other state shapes,
// another key group count). Restoring it would read state of another
// shape, or silently start some operators empty.
var ErrCheckpointMismatch = errors.New("the checkpoint does not fit this job")

// CheckRestore says whether checkpoint meta can be restored into a job
// with checkpointing cfg and region reg (nil: none): the same source and
// sink (as far as both describe them), the same region operators, in the
// same places, with the same State, and the same key group count (reg's
// Groups; 0 does not check it). It returns nil, or an error wrapping
// ErrCheckpointMismatch that names what differs. runtime.Run checks it
// too; callers choosing a checkpoint check first.
func CheckRestore(meta *snapshot.Metadata, cfg *Checkpointing, reg *Region) error {
	var ops []core.OperatorDef
	groups := 0
	if reg != nil {
		ops, groups = reg.Ops, reg.Groups
	}
	id := snapshot.Name(meta.ID)
	for _, io := range []struct{ what, was, is string }{
		{"source", meta.Extra["source"], cfg.Source}, {"sink", meta.Extra["sink"], cfg.Sink}} {
		if io.was != "" && io.is != "" && io.was != io.is {
			return fmt.Errorf("%w: %s: the %s was %s, is now %s", ErrCheckpointMismatch, id, io.what, io.was, io.is)
		}
	}
	if len(meta.Operators) != len(ops) || len(meta.OperatorStates) != len(ops) {
		return fmt.Errorf("%w: %s holds %d region operators (%s), the job has %d", ErrCheckpointMismatch, id,
			len(meta.Operators), strings.Join(meta.Operators, ", "), len(ops))
	}
	for i, d := range ops {
		if meta.OperatorStates[i] != d.State {
			return fmt.Errorf("%w: %s: region.ops[%d] (%s) was %q, is now %q", ErrCheckpointMismatch, id, i, d.Name, meta.OperatorStates[i], d.State)
		}
	}
	if groups > 0 && meta.KeyGroups > 0 && meta.KeyGroups != groups {
		return fmt.Errorf("%w: %s has %d key groups, the job %d", ErrCheckpointMismatch, id, meta.KeyGroups, groups)
	}
	if len(meta.Owners) > 0 {
		if _, err := kvstate.NewAssigned(meta.Owners, meta.Channels); err != nil {
			return fmt.Errorf("%w: %s: its key-group table: %v", ErrCheckpointMismatch, id, err)
		}
		if groups > 0 && len(meta.Owners) != groups {
			return fmt.Errorf("%w: %s has a table of %d key groups, the job %d", ErrCheckpointMismatch, id, len(meta.Owners), groups)
		}
	}
	return nil
}
