// Package handoff is the key-group handoff of a live change of a keyed
// region's channels: a change of the channel count or a rebalance step at
// the same count (docs/ARCHITECTURE.md, "Live channel changes" and
// "Rebalancing at the same channel count"; prepare → sync → update, Trisk,
// SoCC 2021; holding, Megaphone, PVLDB 12(9), 2019).
//
// A Plan says, per channel, which key groups it loses and to whom, and
// which it gains and from which losing channels. A Channel is one
// channel's side of one change: its driver (the channel stage in
// core/runtime) steps it through what it sees — the change's marker, the
// decision to hold, each handoff it takes from its mailbox, each batch
// that comes while it holds — and does what it answers: hand over these
// groups, adopt these handoffs, hold or wait, settled.
//
// The package is pure: no goroutines, no clock, no waiting. Pauses are
// measured from clock readings the driver passes in (ns, of any clock);
// the package only subtracts and adds them. Not safe for concurrent use:
// a Channel belongs to its channel's goroutine, a Plan is read-only once
// made.
//
// Invariants (each checked by the script tests, testdata/*.txt):
//   - A group changes owner once per change, from its owner in the table
//     before to its owner in the table after; a channel hands each of its
//     new owners one handoff, at its marker, after every record routed to
//     it before the marker.
//   - A channel adopts nothing before its own marker. A handoff that
//     arrives earlier (its loser reached the marker first) is kept and
//     adopted at the marker: before it the channel still processes
//     batches, and a watermark among them would fire the gained groups'
//     windows a second time (their old owner fired them at the same
//     watermark, before its marker).
//   - A channel is settled when it has adopted one handoff from every
//     channel that loses groups to it, in any order.
//   - While a channel holds, every group it gains is held until it is
//     settled: the records kept meanwhile are applied when the last
//     handoff is adopted, all together, in arrival order. Arrival order
//     is each key's record order (the splitter routes a key's records to
//     one channel in sequence order), so every accumulator gets the same
//     additions in the same order as without holding — float sums
//     included. Releasing a group when its own handoff arrives, while
//     another's is still out, would let that group's later records pass
//     its earlier kept ones.
package handoff

import (
	"errors"
	"fmt"
	"slices"

	"streamd/kvstate"
)

// Loss is the key groups one channel hands to one new owner.
type Loss struct {
	To     int
	Groups []int // in increasing order
}

// Handoff carries key groups from their old owner to the new one. State
// is, per region operator, what its Migrator released (nil otherwise):
// the package never looks at it.
type Handoff struct {
	From   int
	Groups []int
	State  []any
}

// Plan is the moves of one change, per channel. It is made before the
// change's markers go out and read-only afterwards.
type Plan struct {
	from, to int
	balance  bool
	lose     [][]Loss // by old owner, new owners in increasing order
	gains    [][]int  // by new owner: groups, by old owner then group
	losers   [][]int  // by new owner: the channels that hand it groups, increasing
}

// NewPlan makes the plan of a change from from channels to to (equal for a
// rebalance step, balance) with moves (kvstate.Moves or a step of
// kvstate/balance: each group at most once, From ≠ To, both below
// max(from, to)).
func NewPlan(moves []kvstate.Move, from, to int, balance bool) *Plan {
	n := max(from, to)
	p := &Plan{from: from, to: to, balance: balance, lose: make([][]Loss, n), gains: make([][]int, n), losers: make([][]int, n)}
	for _, m := range moves {
		ls := p.lose[m.From]
		i := slices.IndexFunc(ls, func(l Loss) bool { return l.To == m.To })
		if i < 0 {
			i = len(ls)
			p.lose[m.From] = append(ls, Loss{To: m.To})
		}
		p.lose[m.From][i].Groups = append(p.lose[m.From][i].Groups, m.Group)
	}
	for from, ls := range p.lose {
		slices.SortFunc(ls, func(a, b Loss) int { return a.To - b.To })
		for _, l := range ls {
			slices.Sort(l.Groups)
			p.losers[l.To] = append(p.losers[l.To], from)
			p.gains[l.To] = append(p.gains[l.To], l.Groups...)
		}
	}
	return p
}

// From and To are the channel counts before and after the change.
func (p *Plan) From() int { return p.from }
func (p *Plan) To() int   { return p.to }

// Balance says the change is a rebalance step (same channel count).
func (p *Plan) Balance() bool { return p.balance }

// Losses lists what channel c hands over, by new owner.
func (p *Plan) Losses(c int) []Loss {
	if c >= len(p.lose) {
		return nil
	}
	return p.lose[c]
}

// Gains lists the key groups channel c gains.
func (p *Plan) Gains(c int) []int {
	if c >= len(p.gains) {
		return nil
	}
	return p.gains[c]
}

// Losers lists the channels that hand channel c groups: one handoff each.
func (p *Plan) Losers(c int) []int {
	if c >= len(p.losers) {
		return nil
	}
	return p.losers[c]
}

// Retires says channel c ends at the change: its marker is the last batch
// it processes (after handing over every group it owned).
func (p *Plan) Retires(c int) bool { return c >= p.to }

// Added says channel c is started by the change: it has no marker and
// nothing to hand over, only groups to adopt (Join).
func (p *Plan) Added(c int) bool { return c >= p.from }

// Moves says channel c loses or gains key groups.
func (p *Plan) Moves(c int) bool { return len(p.Losses(c)) > 0 || len(p.Gains(c)) > 0 }

// Phase is where a channel is in a change.
type Phase uint8

const (
	// Before the change's marker: the channel processes batches as
	// before and adopts nothing.
	Before Phase = iota
	// Waiting at the marker (or, added, before its first batch): it
	// processes nothing until its handoffs are in.
	Waiting
	// Holding past the marker: its operators hold the groups it gains
	// while it processes the batches after the marker.
	Holding
	// Settled: every handoff adopted; the change is over for the channel.
	Settled
)

func (ph Phase) String() string {
	return [...]string{"before", "waiting", "holding", "settled"}[ph]
}

// ErrHandoff is returned for a handoff the plan does not send the
// channel, or one sent twice.
var ErrHandoff = errors.New("unexpected handoff")

// Channel is channel c's side of one change. Its zero value is not
// usable: At or Join makes one.
type Channel struct {
	p      *Plan
	c      int
	phase  Phase
	in     []bool    // by index in p.Losers(c): its handoff arrived
	left   int       // handoffs not arrived
	early  []Handoff // arrived before the marker, kept for it
	since  int64     // start of the pause interval open (open)
	open   bool
	pause  int64 // ns, closed intervals
	waited bool  // a batch had to wait for the handoff while holding
	held   bool  // it held: the gains were held at some point
}

// At is channel c, one of the channels before the change, before the
// change's marker.
func At(p *Plan, c int) *Channel {
	return &Channel{p: p, c: c, in: make([]bool, len(p.Losers(c))), left: len(p.Losers(c))}
}

// Join is channel c added by the change: it has no marker and starts
// waiting for the groups it gains. Its pause is set by Joined.
func Join(p *Plan, c int) *Channel {
	ch := At(p, c)
	ch.phase = Waiting
	if ch.left == 0 {
		ch.phase = Settled
	}
	return ch
}

// Phase is where the channel is.
func (ch *Channel) Phase() Phase { return ch.phase }

// Settled says every handoff the channel expects has been adopted.
func (ch *Channel) Settled() bool { return ch.phase == Settled }

// Left is how many handoffs the channel still expects.
func (ch *Channel) Left() int { return ch.left }

// Mark is the channel at the change's marker, at clock reading now: it
// returns what to hand over (release each Loss's groups from the
// operators and send them to Loss.To) and the handoffs that arrived
// earlier, to adopt at once, in arrival order. The channel's pause opens
// here. Afterwards it is Settled (nothing to gain, or everything came
// early) or Waiting; a Waiting channel either holds (CanHold, Hold) or
// takes its handoffs as they come (Arrive) until Settled.
func (ch *Channel) Mark(now int64) (lose []Loss, adopt []Handoff) {
	if ch.phase != Before {
		panic(fmt.Sprintf("handoff: channel %d: a second marker of one change (%s)", ch.c, ch.phase))
	}
	ch.phase = Waiting
	if ch.left == 0 {
		ch.phase = Settled
	}
	ch.since, ch.open = now, true
	adopt, ch.early = ch.early, nil
	return ch.p.Losses(ch.c), adopt
}

// CanHold says the channel may hold instead of waiting: it waits at a
// rebalance step's marker for groups. A change of the channel count
// drains first (the old owners are at their markers within µs), so its
// channels wait.
func (ch *Channel) CanHold() bool {
	return ch.phase == Waiting && ch.p.balance && !ch.p.Added(ch.c)
}

// Hold is the channel, at clock reading now, going on past the marker
// with its operators holding the groups it gains (they accepted). Its
// pause so far closes.
func (ch *Channel) Hold(now int64) {
	if !ch.CanHold() {
		panic(fmt.Sprintf("handoff: channel %d holds %s", ch.c, ch.phase))
	}
	ch.phase, ch.held = Holding, true
	ch.close(now)
}

// Held says a record of key group g that the channel processes now must
// be held: g is a group it gains and it holds. Every gained group stays
// held until the channel is settled (the package doc says why).
func (ch *Channel) Held(g int) bool {
	return ch.phase == Holding && slices.Contains(ch.p.Gains(ch.c), g)
}

// Arrive is handoff h taken from the channel's mailbox. It returns the
// handoffs to adopt now, in arrival order: h, or none before the marker
// (h is kept for Mark). The channel is Settled once every loser's has
// come; adopting the last releases what its operators held.
func (ch *Channel) Arrive(h Handoff) ([]Handoff, error) {
	i := slices.Index(ch.p.Losers(ch.c), h.From)
	if i < 0 || ch.in[i] {
		return nil, fmt.Errorf("channel %d: %w from channel %d", ch.c, ErrHandoff, h.From)
	}
	ch.in[i] = true
	ch.left--
	if ch.phase == Before {
		ch.early = append(ch.early, h)
		return nil, nil
	}
	if ch.left == 0 {
		ch.phase = Settled
	}
	return []Handoff{h}, nil
}

// Check is the holding channel, at clock reading now, before a batch: it
// is about to adopt what has arrived (and, for a batch that needs the held
// groups' state, to Wait). Its pause opens; Resume closes it.
func (ch *Channel) Check(now int64) {
	ch.since, ch.open = now, true
}

// Wait notes that a batch must wait for the rest of the handoffs (one
// that needs the held groups' state): the driver blocks on its mailbox.
func (ch *Channel) Wait() {
	if ch.phase == Holding {
		ch.waited = true
	}
}

// Resume is the channel going on processing at clock reading now, after
// the marker, a Check, or adopting: the pause interval open closes.
func (ch *Channel) Resume(now int64) { ch.close(now) }

// Joined is the added channel settled at clock reading now, synced being
// when the markers went out (0: not known): before that nothing is routed
// to it, so its pause counts from there.
func (ch *Channel) Joined(synced, now int64) {
	if synced != 0 {
		ch.since, ch.open = synced, true
		ch.close(now)
	}
}

func (ch *Channel) close(now int64) {
	if ch.open {
		ch.pause += max(0, now-ch.since)
		ch.open = false
	}
}

// Pause is the channel's pause in the change so far (ns): the intervals
// from the marker to holding or to the end of adoption, from each Check
// to its Resume; for an added channel from the markers going out to
// Joined. It is reported once Settled, and only where Counts says.
func (ch *Channel) Pause() int64 { return ch.pause }

// Counts says the channel's pause is reported: at a change of the channel
// count every channel's, at a rebalance step only those that lose or gain
// groups (the others pass the marker without waiting).
func (ch *Channel) Counts() bool { return !ch.p.balance || ch.p.Moves(ch.c) }

// Holds says the channel held the groups it gained, and Waited that a
// batch then had to wait for their handoff.
func (ch *Channel) Holds() bool  { return ch.held }
func (ch *Channel) Waited() bool { return ch.waited }
