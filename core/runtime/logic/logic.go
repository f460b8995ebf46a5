package logic

import (
	"errors"
	"fmt"
	"slices"

	"streamd/core/plan"
)

// Errors of the protocol. ErrEnded and ErrOrder answer a Place; ErrEpoch
// is a follower's.
var (
	// ErrEnded: the input has ended (End); no record would see the new
	// logic, so the update is not placed.
	ErrEnded = errors.New("the input has ended")
	// ErrOrder: a sync point before the last update's (a driver's bug).
	ErrOrder = errors.New("logic: sync point out of order")
	// ErrEpoch: a follower met a marker out of epoch order: one met twice
	// or one skipped (a bug upstream).
	ErrEpoch = errors.New("logic: update marker out of order")
)

// Stage is the part of a job an operator runs in.
type Stage uint8

const (
	// Pre: before the parallel region, on the single source stage or on
	// every source worker.
	Pre Stage = iota
	// Region: in every channel.
	Region
	// Post: after the merger, on every output worker (or the one the
	// merger runs inline).
	Post
)

var stageNames = [...]string{"pre", "region", "post"}

func (s Stage) String() string {
	if int(s) < len(stageNames) {
		return stageNames[s]
	}
	return fmt.Sprintf("Stage(%d)", uint8(s))
}

// Op names the operator an update targets: its name, its stage and its
// index among that stage's operators.
type Op struct {
	Name  string
	Stage Stage
	Index int
}

// Point is a sync point: Seq is the splitter sequence number of the
// update's marker (records before it saw the old logic; 0 when the
// splitter numbers the marker only as it passes, on the single source
// stage, after Place); Block, with
// source workers, the block it goes before (its marker is sent by that
// block's worker; −1 on the single source stage); Position the input
// records before it (−1: not known).
type Point struct {
	Seq      uint64
	Block    int
	Position int64
}

// Update is one placed update, read-only once placed.
type Update struct {
	// Epoch is its number: 1 for the first update the run placed, then
	// 2, …; a stage whose instances run the logic after updates 1 … e is
	// at epoch e.
	Epoch uint64
	Op
	Point
	// Body is the operator's new entry as the request gave it (job-file
	// YAML or JSON), which the checkpoints after the sync point record.
	Body string
}

// Record is one update a checkpoint carries (plan.UpdateRecord): the
// operator and its entry as the update gave it.
type Record = plan.UpdateRecord

// Def is what Check needs of an operator's definition.
type Def struct {
	// State is the kind of keyed state it keeps ("" when none).
	State string
	// Partial: it runs a pre-aggregation in every channel.
	Partial bool
	// Retune: its instances can take new settings in place, keeping their
	// state (an old definition's; core.Retuner).
	Retune bool
	// Shape is its output schema's fields, names and types, as one
	// comparable text; Out the schema as the refusal shows it.
	Shape, Out string
}

// Mode is how an update that is not refused is carried out.
type Mode uint8

const (
	// Replace: every instance is replaced by one of the new definition.
	Replace Mode = iota
	// Retune: every instance keeps its state and takes the new settings.
	Retune
)

func (m Mode) String() string {
	if m == Retune {
		return "retune"
	}
	return "replace"
}

// Check decides whether operator name, defined by old, may be updated to
// next and how. A keyed operator that retunes with the same state kind
// keeps its instances; otherwise only a stateless operator without a
// pre-aggregation, with the same output schema, is replaced (the schema
// every later operator was built for stays as it is). The error says why
// an update is refused: the caller wraps it as its refusal.
func Check(name string, old, next Def) (Mode, error) {
	if old.State != "" && old.Retune && next.State == old.State {
		return Retune, nil
	}
	switch {
	case old.State != "" || next.State != "":
		return 0, fmt.Errorf("operator %s keeps keyed state (%s): an update would change its state layout, which a running job cannot convert; only stateless operators (filter, map) and a window's allowed lateness can be updated", name, cmpState(old.State, next.State))
	case old.Partial:
		return 0, fmt.Errorf("operator %s runs a pre-aggregation in every channel: it cannot be updated", name)
	case old.Shape != next.Shape:
		return 0, fmt.Errorf("operator %s: the update changes its output from %s to %s; every operator after it was built for the first", name, old.Out, next.Out)
	}
	return Replace, nil
}

func cmpState(old, next string) string {
	if next == "" || next == old {
		return old
	}
	return old + " → " + next
}

// Log is the routing side of a run's updates. The zero value is a run
// with no update placed; NewLog starts from a restored checkpoint's
// records. Not safe for concurrent use: the routing goroutine owns it (with
// source workers, under the exchange's lock).
type Log struct {
	placed  []Update // update e at e−1
	records []Record // the latest per operator, in the order placed
	floor   int
	ended   bool
}

// NewLog is the log of a run restored from a checkpoint that recorded
// records (nil: none), with barriers allowed from block floor on (the
// run's first block).
func NewLog(records []Record, floor int) *Log {
	return &Log{records: records, floor: floor}
}

// Place places an update of op, entry body, at sync point at: it is
// given the next epoch, and the checkpoints after it record it. With
// blocks (at.Block ≥ 0) at.Block is the first block a barrier may go in
// from now on. Errors: ErrEnded after End; ErrOrder for a sync point
// before the last update's (with blocks: a block not above its block).
func (l *Log) Place(op Op, body string, at Point) (Update, error) {
	if l.ended {
		return Update{}, ErrEnded
	}
	if n := len(l.placed); n > 0 {
		last := l.placed[n-1].Point
		if at.Seq < last.Seq || (at.Block >= 0 && at.Block <= last.Block) {
			return Update{}, fmt.Errorf("%w: seq %d block %d after seq %d block %d", ErrOrder, at.Seq, at.Block, last.Seq, last.Block)
		}
	}
	u := Update{Epoch: uint64(len(l.placed)) + 1, Op: op, Point: at, Body: body}
	l.placed = append(l.placed, u)
	// Copy on write: a barrier placed before keeps the slice it took.
	l.records = append(slices.DeleteFunc(slices.Clone(l.records), func(r Record) bool { return r.Operator == op.Name }),
		Record{Operator: op.Name, Body: body})
	if at.Block >= 0 {
		l.floor = max(l.floor, at.Block)
	}
	return u, nil
}

// End notes the end of the input: no update is placed from now on.
func (l *Log) End() { l.ended = true }

// Ended says whether End was called.
func (l *Log) Ended() bool { return l.ended }

// Epoch is the last epoch placed (0: none).
func (l *Log) Epoch() uint64 { return uint64(len(l.placed)) }

// Floor is the first block a barrier may go in: the newest update's
// block (or NewLog's floor).
func (l *Log) Floor() int { return l.floor }

// Records are the updates a barrier placed now records: the latest per
// operator, in the order placed (the restored checkpoint's first). The
// slice is never written again.
func (l *Log) Records() []Record { return l.records }

// At is the update whose marker goes before block b (with blocks), if
// one was placed there.
func (l *Log) At(b int) (Update, bool) {
	for i := len(l.placed) - 1; i >= 0 && l.placed[i].Block >= b; i-- {
		if l.placed[i].Block == b {
			return l.placed[i], true
		}
	}
	return Update{}, false
}

// Due appends to dst the updates a source worker at epoch f takes when it
// starts block b: those placed after f at blocks up to b, in epoch order.
// The worker meets each (Follower.Meet) and swaps the pre-region ones.
func (l *Log) Due(dst []Update, f *Follower, b int) []Update {
	for e := f.epoch; e < uint64(len(l.placed)) && l.placed[e].Block <= b; e++ {
		dst = append(dst, l.placed[e])
	}
	return dst
}

// Follow is a follower of stage s started now: its instances are built
// from the definitions as of now, with every update placed so far.
func (l *Log) Follow(s Stage) Follower {
	return Follower{stage: s, epoch: l.Epoch()}
}

// Follower is one stage's side of the protocol: the epoch of the logic
// its instances run. A stage goroutine owns it.
type Follower struct {
	stage Stage
	epoch uint64
}

// NewFollower is a follower of stage s whose instances run the logic of
// epoch e (0: as the run started).
func NewFollower(s Stage, e uint64) Follower {
	return Follower{stage: s, epoch: e}
}

// Meet is the stage at u's marker (or, for a source worker, at u's
// block): it moves to u's epoch and says whether the stage swaps its
// instance (u targets its stage). The stage must meet every epoch after
// its own, once and in order: otherwise ErrEpoch, and the follower is
// unchanged.
func (f *Follower) Meet(u Update) (swap bool, err error) {
	if u.Epoch != f.epoch+1 {
		return false, fmt.Errorf("%w: %s stage at epoch %d met update %d (%s)", ErrEpoch, f.stage, f.epoch, u.Epoch, u.Name)
	}
	f.epoch = u.Epoch
	return u.Stage == f.stage, nil
}

// Epoch is the epoch of the logic the stage's instances run.
func (f *Follower) Epoch() uint64 { return f.epoch }

// Stage is the stage the follower runs.
func (f *Follower) Stage() Stage { return f.stage }
