// Package endinput is the protocol of checkpoints after the end of the
// input (docs/ARCHITECTURE.md, "End of stream"): once a job's source has
// nothing left, its operators may still work for seconds through what the
// rings hold, and a checkpoint that comes due then is taken too. Its
// barrier goes after every record (a restore from it reads nothing); the
// barriers placed there are the tail.
//
// Tail is the protocol as a deterministic state machine, the shape of
// etcd's raft: no goroutines, no clock, no sleeps and no lock. A driver
// observes the run (which channels have read every block, whether the
// rings still hold batches, whether the checkpoint coordinator finds a
// checkpoint due on its injected clock), steps Tail with those facts and
// does what it decides: deliver a barrier, place one, make End, or wait
// and step again. The same facts in the same order give the same
// decisions, so the interleavings a goroutine test cannot force are
// stepped by script tests (testdata/*.txt).
//
// The drivers in package runtime:
//   - the single source stage (sourceStage.endOfInput) is the one
//     channel 0 of a one-channel Tail: it places a barrier (injects it
//     into its chain) while the rings from the splitter to the merger
//     hold batches, and closes once they are empty;
//   - with source workers, every channel that has read every block steps
//     the exchange's one Tail under the exchange's lock
//     (exchange.endBarrier): whichever finds a checkpoint due places the
//     barrier, and every channel delivers every barrier placed before it
//     makes End.
package endinput

import "fmt"

// Action is what a step decides.
type Action uint8

const (
	// Wait: nothing to do now; the driver steps again later (the facts may
	// change: a ring empties, a checkpoint comes due, a channel reaches
	// the end).
	Wait Action = iota
	// Deliver: the channel delivers tail barrier Decision.Barrier, placed
	// by another channel, then steps again.
	Deliver
	// Place: the channel places tail barrier Decision.Barrier — the driver
	// starts the checkpoint (its epoch) — and delivers it at once; it
	// counts as delivered by that channel.
	Place
	// Close: the channel has delivered every tail barrier and none will
	// follow: it makes End. Every later step of that channel closes too.
	Close
)

func (a Action) String() string {
	switch a {
	case Wait:
		return "wait"
	case Deliver:
		return "deliver"
	case Place:
		return "place"
	case Close:
		return "close"
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

// Decision is a step's outcome: Barrier is the tail barrier's index
// (0, 1, … in the order placed) for Deliver and Place, 0 otherwise.
type Decision struct {
	Action  Action
	Barrier int
}

// Facts are what the driver observes when it steps, read under the lock
// that serializes the steps (if there are several channels).
type Facts struct {
	// Channels is the channel count of the newest routing: the channels
	// that must all be at the end before the tail closes. A live change
	// of the channel count may change it between steps.
	Channels int
	// RingsHold says a ring to the merger (for the single source stage:
	// or from its splitter) still holds batches: operators still work,
	// and a checkpoint that comes due is still worth taking.
	RingsHold bool
	// Due says a checkpoint is due by the clock (the coordinator's,
	// injected: checkpointer.dueByClock) and none is in flight.
	Due bool
}

// Tail is the end-of-input protocol of one run. Steps must be serialized
// (the drivers hold the exchange's lock, or have one goroutine); Tail has
// no lock of its own. The zero value is not usable: see New.
//
// Invariants: placed ≤ room; each channel's delivered ≤ placed; closed
// only when every channel of the newest routing (Facts.Channels) was at
// the end and the rings held nothing, or the tail is full; no barrier is
// placed once closed.
type Tail struct {
	room      int
	atEnd     []bool // by channel: it has read every block (stepped)
	delivered []int  // by channel: tail barriers it has delivered or placed
	placed    int
	closed    bool
}

// New makes the protocol's state for a run whose tail may hold room
// barriers (room ≥ 0; the exchange's sequence space leaves it
// tailRoom − 1, the single source stage none: math.MaxInt).
func New(room int) *Tail {
	return &Tail{room: room}
}

// Step is channel c's step: c has read every block (it stays at the end
// from its first step on), and f is the run as observed now. In this
// order: a barrier placed that c has not delivered is delivered; once the
// tail is closed or full, c closes; once every channel of the newest
// routing is at the end and the rings are empty, the tail closes (what is
// left is the merger's and the sink's work, which a barrier cannot cover:
// they see End first); else, when a checkpoint is due, c places the next
// barrier; else it waits.
func (t *Tail) Step(c int, f Facts) Decision {
	for len(t.atEnd) <= c {
		t.atEnd, t.delivered = append(t.atEnd, false), append(t.delivered, 0)
	}
	t.atEnd[c] = true
	if i := t.delivered[c]; i < t.placed {
		t.delivered[c]++
		return Decision{Action: Deliver, Barrier: i}
	}
	if t.closed || t.placed >= t.room {
		return Decision{Action: Close}
	}
	if t.allAtEnd(f.Channels) && !f.RingsHold {
		t.closed = true
		return Decision{Action: Close}
	}
	if f.Due {
		i := t.placed
		t.placed++
		t.delivered[c]++
		return Decision{Action: Place, Barrier: i}
	}
	return Decision{Action: Wait}
}

// allAtEnd says whether channels 0..n-1 have all stepped (read every
// block).
func (t *Tail) allAtEnd(n int) bool {
	for c := range n {
		if c >= len(t.atEnd) || !t.atEnd[c] {
			return false
		}
	}
	return true
}

// AtEnd says whether channel c has stepped: it has read every block.
func (t *Tail) AtEnd(c int) bool { return c < len(t.atEnd) && t.atEnd[c] }

// Placed is how many tail barriers have been placed.
func (t *Tail) Placed() int { return t.placed }

// Closed says whether the tail is closed: no barrier will be placed.
func (t *Tail) Closed() bool { return t.closed || t.placed >= t.room }

// String is the state, for tests: the barriers placed, whether the tail
// is closed, and each channel at the end with the barriers it delivered.
func (t *Tail) String() string {
	s := fmt.Sprintf("placed %d", t.placed)
	if t.Closed() {
		s += " closed"
	}
	for c, at := range t.atEnd {
		if at {
			s += fmt.Sprintf(" c%d:%d", c, t.delivered[c])
		}
	}
	return s
}
