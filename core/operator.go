package core

import (
	"sync/atomic"
)

// Operator turns batches of its input schema into batches of its output
// schema, one batch per call (docs/ARCHITECTURE.md, "Hot-path rules", 2).
// An Operator instance is used by one goroutine only; a parallel region
// holds one instance per channel.
//
// Lifecycle of an instance:
//
//	open      OperatorDef.New(env) creates it (before its stage starts, or
//	          when a live change adds a channel);
//	process   Process for data, Watermark for watermarks, in FIFO order;
//	finish    Finish once at end of stream — only when the stream ends;
//	          not when the job fails, is cancelled, or the instance's
//	          channel is removed by a live change;
//	close     Close (if the instance implements Closer) exactly once, on
//	          every exit: after Finish, after a failure or cancellation,
//	          after its channel was removed, or when the job failed before
//	          its stage started. Nothing is called after Close.
//
// The runtime calls every method from the goroutine that owns the instance
// (Close too, or, when that goroutine never ran or has ended, the run's
// teardown after every stage has stopped).
type Operator interface {
	// Process handles one data batch. It borrows in for the duration of the
	// call: to pass it on (unchanged, or modified in place, e.g. filtered)
	// it calls out.Emit(in), which takes ownership; otherwise the caller
	// releases in after Process returns. Output records go to out.
	// An error stops the job.
	Process(in *Batch, out *Emitter) error
	// Watermark tells the operator that event time reached wm (ns), at
	// splitter sequence number seq; results it releases now go to out,
	// stamped with seq, in a defined order (window end, then key). The
	// runtime forwards the watermark after the call.
	Watermark(wm int64, seq uint64, out *Emitter) error
	// Finish is called once at end of stream (seq: the End marker's
	// sequence number), after the last Watermark; the operator emits what it
	// still holds.
	Finish(seq uint64, out *Emitter) error
}

// Closer is implemented by operators that hold resources (goroutines,
// connections, caches) to free at the end of their lifecycle: Close is
// called exactly once per instance, on success and failure alike (see
// Operator). An error from it is the job's error if the job had none.
type Closer interface {
	Close() error
}

// Base gives an Operator no-op Watermark and Finish; embed it.
type Base struct{}

// Watermark does nothing.
func (Base) Watermark(int64, uint64, *Emitter) error { return nil }

// Finish does nothing.
func (Base) Finish(uint64, *Emitter) error { return nil }

// Env is what an operator instance learns about where it runs.
type Env struct {
	// Channel is the instance's channel index in a parallel region (0 outside one).
	Channel int
	// Channels is the region's channel count (1 outside one).
	Channels int
	// Errors applies the job's on_error policy.
	Errors *ErrorPolicy
	// Watermark, when Rescaled, is the event time (ns) a channel added
	// while the job runs starts at: the watermark the splitter last sent.
	// Otherwise the instance starts before any watermark (NoTime).
	Watermark int64
	Rescaled  bool
}

// Snapshotter is implemented by stateful keyed operators: they serialise
// the state of key groups at a checkpoint barrier (the copy the data path
// pauses for; writing happens elsewhere) and load it back on restore, into
// whatever channel then owns the groups.
type Snapshotter interface {
	// SnapshotGroups appends the state of the given key groups to dst.
	SnapshotGroups(dst []byte, groups []int) ([]byte, error)
	// RestoreGroups loads the groups that keep accepts (nil: all) from
	// state written by SnapshotGroups (of any instance, at any channel
	// count): a channel restores the groups it owns now. Its watermark must
	// already be the checkpoint's (Env).
	RestoreGroups(data []byte, keep func(group int) bool) error
}

// Migrator is implemented by keyed operators whose instances keep data
// about their channel's key groups outside the shared kvstate maps (a
// window's firing index). When key groups change owner, the losing
// instance hands that data to the gaining one, by pointer, in memory.
// Both calls happen on the instances' own goroutines: ReleaseGroups at the
// reconfiguration marker, after every record routed before it;
// AdoptGroups there too, or, for a Holder holding the groups, before a
// later batch (see Holder).
type Migrator interface {
	// ReleaseGroups removes what the instance keeps about key groups and
	// returns it; the caller passes it to AdoptGroups of the new owner.
	ReleaseGroups(groups []int) any
	// AdoptGroups takes over what another instance released.
	AdoptGroups(groups []int, released any)
}

// Holder is a Migrator whose channel may keep processing while key groups
// it gains are still in transit (Megaphone: Hoffmann et al., "Megaphone:
// Latency-conscious state migration for distributed streaming dataflows",
// PVLDB 12(9), 2019: the new owner buffers a migrating key's records until
// its state arrives).
// After HoldGroups(gs) returns true, and until AdoptGroups has been called
// for every group of gs, the instance must not touch the state of gs: its
// old owner may still be writing it. Process does at once, in record
// order, everything that does not read that state (lateness, errors and
// their dead letters, counters) and keeps the state updates of the held
// groups' records in arrival order; the AdoptGroups that ends the hold
// applies them, before it returns. Holding must not change anything the
// operator emits, nor when: Process of a Holder emits nothing (its output
// comes at watermarks and Finish).
//
// While groups are held the runtime gives the instance data batches, and
// watermarks for which Quiet is true; before any other marker (a
// watermark that is not quiet, a barrier, a reconfiguration, an update,
// the end) it waits for the handoff and calls AdoptGroups. ReleaseGroups,
// Watermark (not quiet), Finish and snapshots are therefore never called
// with groups held.
type Holder interface {
	Migrator
	// HoldGroups starts holding the records of groups (key groups the
	// channel gains at a reconfiguration marker, after releasing what it
	// loses). false: the instance cannot hold now (nothing changed), and
	// the runtime waits for the handoff as for any Migrator.
	HoldGroups(groups []int) bool
	// Quiet reports whether Watermark(wm) would emit nothing and change
	// no record's treatment (lateness) for any key, held groups' included,
	// judged without their state: such a watermark may pass while groups
	// are held. wm is event time in ns.
	Quiet(wm int64) bool
}

// StateSizer is implemented by keyed operators that can estimate how much
// state a key group holds, so that a rebalance moves few bytes
// (kvstate/balance). GroupBytes is called on the instance's own goroutine,
// only for key groups its channel owns; it must be cheap (O(1): a count
// times a per-entry size, not a walk of the state).
type StateSizer interface {
	// GroupBytes returns the estimated state bytes of key group g.
	GroupBytes(g int) int64
}

// OperatorDef is an operator bound to its input schema: what the job graph
// knows before any instance exists. Definitions are built once per job
// (expressions compiled, lookup tables loaded, state stores created) and
// instantiated once per channel.
type OperatorDef struct {
	// Name is the operator's name in reports and errors.
	Name string
	// Out is the output schema.
	Out *Schema
	// New makes one instance.
	New func(env Env) (Operator, error)
	// Order, for an operator that can emit several records at one sequence
	// number (a window firing), compares two such records (window end, then
	// key) so that the merger interleaves channels deterministically; nil
	// for operators whose output records keep their input's sequence
	// numbers.
	Order func(a, b []Value) int
	// OrderBy is Order as data: the fields of Out that Order compares, in
	// order (window end, then the key fields), set with Order, so that the
	// runtime can carry the order through the operators after this one in
	// a region (Keep) and build the same comparison on their output.
	OrderBy []OrderField
	// Keep, for an operator whose output records are its input records
	// changed field by field (filter, map, project, the lookups), says
	// where each input field's value is in an output record: Keep[i] is
	// input field i's index in Out, or −1 when the output does not hold it
	// unchanged (dropped, or replaced by a map). Nil: unknown (the
	// operator builds records of its own). The runtime carries an earlier
	// operator's OrderBy through it: a window's firing, then a filter in
	// the same region, still merges by window end, then key.
	Keep []int
	// Stats, if set, adds operator-specific figures to the final report
	// (e.g. cache hits); called after the job ends.
	Stats func() map[string]int64
	// Partial, for an operator that may run right after a parallel region
	// (the first post-region operator), makes a channel-local
	// pre-aggregation: local-global aggregation, as Flink's two-phase
	// aggregates. The runtime runs one Partial instance at the end of every
	// channel, so the merger and this operator see only what the partials
	// keep. The contract: this operator over the merge of the partials'
	// outputs emits exactly what it emits over the merge of the region's
	// output; a partial emits a subsequence of its input (the records it
	// keeps, in order, schema unchanged, at the sequence number of the
	// record or marker that made it emit, none earlier than its input's),
	// so the region's Order still orders the merge; and it holds no state
	// across a watermark, barrier or reconfiguration marker (it is not
	// checkpointed or migrated). Nil: none.
	Partial func(env Env) (Operator, error)
	// Local, for a keyed operator that may run first in a parallel region,
	// is the local step of local-global aggregation before the splitter
	// (window.Spec.Local): the runtime runs one instance of it after the
	// pre-region operators of the single source stage and of every source
	// worker. The contract: it emits, for each data batch, one batch whose
	// records the splitter routes by the region's key, which must keep the
	// input's key fields at their places (Local.Out extends the input
	// schema); this operator over those batches emits exactly what it emits
	// over the plain input, with the same late counts and dead letters; and
	// it holds no state from one batch to the next (nothing in flight at a
	// watermark, barrier or reconfiguration marker, so it is neither
	// checkpointed nor migrated). Nil: none.
	Local *OperatorDef
	// State, for an operator whose instances keep state in checkpoints
	// (Snapshotter), says in words everything that state's meaning and
	// format depend on: its kind, key, key groups, window and aggregates.
	// A checkpoint records it, and a restore into an operator whose State
	// differs is refused (ErrCheckpointMismatch) rather than reading state
	// of another shape. Empty for stateless operators.
	State string
	// Retune, for a keyed operator some of whose settings can change in a
	// running job without changing its state (a window's allowed
	// lateness), takes an update: next is the definition the update built
	// from the operator's new entry. It returns the definition that stages
	// started from the sync point on instantiate — this one's state store
	// with next's settings — or an error saying why next cannot be taken
	// in place (another state layout). Instances implement Retuner and
	// take the settings at the sync point. Nil: the operator cannot be
	// changed while it runs.
	Retune func(next OperatorDef) (OperatorDef, error)
	// Settings are what Retune and Retuner read from a definition an
	// update built (a window's: its allowed lateness); opaque to the
	// runtime. Nil for operators without Retune.
	Settings any
}

// Retuner is implemented by the instances of operators with
// OperatorDef.Retune. At an update's sync point — after every record
// before it, before any after it — the runtime calls Retune on the
// instance's goroutine with the definition Retune returned; the instance
// keeps its state and uses def's settings from then on. An error fails
// the job.
type Retuner interface {
	Retune(def OperatorDef) error
}

// Counters are an operator's record counts, summed over its instances.
// They are updated once per batch with atomics, so a reporter may read them
// while the job runs.
type Counters struct {
	In, Out atomic.Int64
}

// Emitter receives an operator's output and hands it downstream: to the
// next fused operator (a direct call) or to the stage's output (a ring).
// It is not safe for concurrent use.
type Emitter struct {
	schema    *Schema
	cur       *Batch
	next      func(*Batch) error
	forwarded *Batch
	err       error
	counters  *Counters
	stamp     int64 // Stamp for new batches: the input's (set by Chain)
}

// NewEmitter returns an emitter of output schema s whose batches go to next.
// counters may be nil.
func NewEmitter(s *Schema, next func(*Batch) error, counters *Counters) *Emitter {
	return &Emitter{schema: s, next: next, counters: counters}
}

// Schema is the output schema.
func (e *Emitter) Schema() *Schema { return e.schema }

// Append adds an output record with the given metadata (sequence number,
// key hash, event time in ns, input position) and returns its fields to be
// filled before the next call on e. When the current output batch is full,
// it is handed downstream first; a downstream error is kept and returned by
// Flush (and by Err).
func (e *Emitter) Append(seq, hash uint64, t, pos int64) []Value {
	if e.cur == nil {
		e.cur = NewBatch(e.schema)
		e.cur.Stamp = e.stamp
	} else if e.cur.Full() {
		e.send()
		e.cur = NewBatch(e.schema)
		e.cur.Stamp = e.stamp
	}
	return e.cur.Append(seq, hash, t, pos)
}

// Emit hands a whole batch downstream, after whatever Append built so far.
// Ownership of b passes to the emitter.
func (e *Emitter) Emit(b *Batch) error {
	e.forwarded = b
	if e.cur != nil {
		e.send()
	}
	if e.err != nil {
		b.Release()
		return e.err
	}
	if b.Kind == Data && b.Len == 0 {
		b.Release()
		return nil
	}
	if e.counters != nil && b.Kind == Data {
		e.counters.Out.Add(int64(b.Len))
	}
	e.err = e.next(b)
	return e.err
}

// Flush hands the batch being built downstream and returns the first
// downstream error seen.
func (e *Emitter) Flush() error {
	if e.cur != nil {
		e.send()
	}
	return e.err
}

// Err returns the first downstream error seen.
func (e *Emitter) Err() error { return e.err }

func (e *Emitter) send() {
	b := e.cur
	e.cur = nil
	if e.err != nil || b.Len == 0 {
		b.Release()
		return
	}
	if e.counters != nil {
		e.counters.Out.Add(int64(b.Len))
	}
	e.err = e.next(b)
}

// OrderField is one field of an operator's output order
// (OperatorDef.OrderBy): its index in the schema, compared by its type,
// nulls last when Nullable (CompareNullable).
type OrderField struct {
	Index    int
	Type     Type
	Nullable bool
}

// CompareBy orders rows a and b by fields, the first that differs
// deciding: -1, 0 or +1.
func CompareBy(fields []OrderField, a, b []Value) int {
	for _, f := range fields {
		var c int
		if f.Nullable {
			c = CompareNullable(f.Type, a[f.Index], b[f.Index])
		} else {
			c = Compare(f.Type, a[f.Index], b[f.Index])
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// CarryOrder carries order, the OrderBy of a region's operator, through
// the operators after it (then): each must say where it keeps the fields
// (Keep) and keep every one unchanged. It returns the order on the last
// one's output, or false when one of them does not keep it (the merger
// then cannot interleave the channels' records of one firing by it).
func CarryOrder(order []OrderField, then []OperatorDef) ([]OrderField, bool) {
	out := append([]OrderField(nil), order...)
	for _, d := range then {
		if d.Keep == nil {
			return nil, false
		}
		for k := range out {
			i := out[k].Index
			if i >= len(d.Keep) || d.Keep[i] < 0 {
				return nil, false
			}
			out[k].Index = d.Keep[i]
		}
	}
	return out, true
}

// KeepAll is Keep for an operator whose output holds its n input fields
// unchanged at the same places (a filter; a lookup, which adds fields
// after them).
func KeepAll(n int) []int {
	k := make([]int, n)
	for i := range k {
		k[i] = i
	}
	return k
}
