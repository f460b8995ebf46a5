// Package change is the source side of one live change on the single
// source stage — of the channel count (prepare → drain → sync → update) or
// a rebalance step at the same count (sync → update) — as a deterministic
// state machine (docs/ARCHITECTURE.md, "Live channel changes"; Trisk,
// SoCC 2021), in the shape of etcd's raft: no goroutines, no clock, no
// sleeps and no lock. The driver (core/runtime, sourceStage.change) steps
// Source with what it observes (whether every old channel has finished
// every batch pushed to it) and does what each step decides: prepare the
// change, pulse or mark a channel, wait and step again, close a removed
// channel's ring, switch the splitter to the new table and rings. The
// same facts give the same decisions, so script tests (testdata/*.txt)
// step every order a goroutine test cannot force.
//
// The order is the protocol's promise:
//
//   - prepare comes first (the added channels exist, waiting for their
//     key groups, before any marker);
//   - a change of the channel count pulses every old channel and then
//     waits until every old channel has finished what was pushed to it
//     (the drain: a channel gaining key groups does not then sit behind
//     their old owner's backlog); a rebalance step does not drain;
//   - every old channel gets the Reconfig marker before the splitter
//     switches: the marker is after everything routed under the old table
//     on each old ring, and the switch is what routes under the new one;
//   - a removed channel's ring is closed only after its marker (it
//     forwards the marker and retires), and before the switch.
package change

import "fmt"

// Action is what a step decides.
type Action uint8

const (
	// Prepare: make the change — the new key-group table and the plan of
	// moves, the added channels' rings, their instances and goroutines
	// (waiting for their key groups) — and step again.
	Prepare Action = iota
	// Pulse: a pulse at the current sequence number to old channel
	// Decision.Channel, so that the merger can order every channel's
	// output so far and no channel stays blocked on its output ring.
	Pulse
	// Wait: an old channel still works through what was pushed to it; the
	// driver waits a little (the source's time counts as the drain) and
	// steps again.
	Wait
	// Mark: the Reconfig marker to old channel Decision.Channel, at the
	// change's sequence number.
	Mark
	// Close: close the ring to channel Decision.Channel, which the change
	// removes (it has its marker).
	Close
	// Switch: the splitter routes under the new table and rings from here
	// on, and the merger's inputs are the new ones. The change is made:
	// every later step is Done.
	Switch
	// Done: nothing left to do.
	Done
)

var actionNames = [...]string{"prepare", "pulse", "wait", "mark", "close", "switch", "done"}

func (a Action) String() string { return actionNames[a] }

// Decision is one step's: the action and, for Pulse, Mark and Close, the
// channel.
type Decision struct {
	Action  Action
	Channel int
}

func (d Decision) String() string {
	switch d.Action {
	case Pulse, Mark, Close:
		return fmt.Sprintf("%s %d", d.Action, d.Channel)
	}
	return d.Action.String()
}

// Facts are what the driver observes before a step.
type Facts struct {
	// Busy: an old channel has not finished every batch pushed to it.
	// Only a step of the drain reads it; the driver may leave it false
	// elsewhere (Source.Draining says when it is read).
	Busy bool
}

type phase uint8

const (
	preparing phase = iota
	pulsing
	draining
	marking
	closing
	switching
	done
)

// Source is the source side of one change from From to To channels. The
// zero value is not usable: New.
type Source struct {
	from, to int
	balance  bool
	phase    phase
	c        int // the next channel of pulsing, marking, closing
}

// New starts a change from from to to channels (both ≥ 1); balance says it
// is a rebalance step (from = to, no drain).
func New(from, to int, balance bool) *Source {
	return &Source{from: from, to: to, balance: balance}
}

// Draining says whether the next step reads Facts.Busy.
func (s *Source) Draining() bool { return s.phase == draining }

// Step decides what the driver does next, given what it observes.
func (s *Source) Step(f Facts) Decision {
	for {
		switch s.phase {
		case preparing:
			s.phase = pulsing
			if s.balance {
				s.phase = marking
			}
			return Decision{Action: Prepare}
		case pulsing:
			if s.c < s.from {
				s.c++
				return Decision{Action: Pulse, Channel: s.c - 1}
			}
			s.phase, s.c = draining, 0
		case draining:
			if f.Busy {
				return Decision{Action: Wait}
			}
			s.phase = marking
		case marking:
			if s.c < s.from {
				s.c++
				return Decision{Action: Mark, Channel: s.c - 1}
			}
			s.phase, s.c = closing, s.to
		case closing:
			if s.c < s.from {
				s.c++
				return Decision{Action: Close, Channel: s.c - 1}
			}
			s.phase = switching
		case switching:
			s.phase = done
			return Decision{Action: Switch}
		default:
			return Decision{Action: Done}
		}
	}
}

// String is the state, for scripts: "from→to", the phase and the next
// channel.
func (s *Source) String() string {
	names := [...]string{"preparing", "pulsing", "draining", "marking", "closing", "switching", "done"}
	return fmt.Sprintf("%d→%d %s next=%d", s.from, s.to, names[s.phase], s.c)
}
