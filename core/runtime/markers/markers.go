package markers

import (
	"errors"
	"fmt"
)

// Kind is what a marker asks of the merger.
type Kind uint8

const (
	// Pass is a marker the merger only hands on (a watermark, a change of
	// logic).
	Pass Kind = iota + 1
	// Barrier is checkpoint barrier Epoch: handed on, the checkpoint's
	// output ends there.
	Barrier
	// End is the end of input: the last marker.
	End
	// Change switches the merger to To channels.
	Change
)

func (k Kind) String() string {
	switch k {
	case Pass:
		return "pass"
	case Barrier:
		return "barrier"
	case End:
		return "end"
	case Change:
		return "change"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Marker is what Aligner knows of a marker.
type Marker struct {
	Kind Kind
	Seq  uint64 // its sequence number (the splitter's)
	// Epoch is a barrier's checkpoint (0: not known, a barrier injected
	// without the coordinator: not checked).
	Epoch uint64
	To    int // a change's channel count
}

func (m Marker) String() string {
	switch m.Kind {
	case Barrier:
		return fmt.Sprintf("barrier e=%d seq=%d", m.Epoch, m.Seq)
	case Change:
		return fmt.Sprintf("change to=%d seq=%d", m.To, m.Seq)
	}
	return fmt.Sprintf("%s seq=%d", m.Kind, m.Seq)
}

// Errors of a driver or a channel that breaks the protocol: they mean a
// bug, and the stage fails.
var (
	// ErrOrder is a marker out of order on a channel: its sequence
	// number not above the channel's last, or a barrier's epoch not above
	// its last.
	ErrOrder = errors.New("markers: out of order")
	// ErrEnded is a marker on a channel after its end.
	ErrEnded = errors.New("markers: after the end of its channel")
	// ErrNotAligned is a release (Aligned) of a marker that some channel
	// has not delivered, or delivered differently.
	ErrNotAligned = errors.New("markers: not aligned")
)

// Aligner is the markers of the merger's channels. The zero value is not
// usable: call New.
type Aligner struct {
	ch    []channel
	epoch uint64 // the last barrier epoch aligned
	done  bool   // End aligned
}

// channel is one channel's state.
type channel struct {
	q     []Marker // delivered, not yet aligned, oldest first
	seq   uint64   // the last marker's sequence number
	epoch uint64   // the last barrier's epoch
	ended bool     // its End, or a change retiring it, was read
}

// New returns the state of n ≥ 1 channels at the start, none of which
// has delivered anything.
func New(n int) *Aligner {
	if n < 1 {
		panic("markers: a merger needs a channel")
	}
	return &Aligner{ch: make([]channel, n)}
}

// Channels is the number of channels of the current set.
func (a *Aligner) Channels() int { return len(a.ch) }

// Ended says channel c's ring delivers nothing more: its End, or a
// change retiring it, was read. A ring that closes before then means
// another stage failed.
func (a *Aligner) Ended(c int) bool { return a.ch[c].ended }

// Done says End was aligned: the stage is done.
func (a *Aligner) Done() bool { return a.done }

// Read notes marker m, read from channel c's ring. Errors: ErrEnded (a
// channel retired by a change is no longer in the set either), ErrOrder;
// the state is then as it was.
func (a *Aligner) Read(c int, m Marker) error {
	if c >= len(a.ch) {
		return fmt.Errorf("%w: %v on channel %d, not in the set of %d", ErrEnded, m, c, len(a.ch))
	}
	ch := &a.ch[c]
	switch {
	case ch.ended:
		return fmt.Errorf("%w: %v on channel %d", ErrEnded, m, c)
	case m.Seq < ch.seq:
		return fmt.Errorf("%w: %v on channel %d after seq %d", ErrOrder, m, c, ch.seq)
	case m.Kind == Barrier && m.Epoch != 0 && m.Epoch <= ch.epoch:
		return fmt.Errorf("%w: %v on channel %d after epoch %d", ErrOrder, m, c, ch.epoch)
	}
	ch.q = append(ch.q, m)
	ch.seq = m.Seq
	switch m.Kind {
	case Barrier:
		if m.Epoch != 0 {
			ch.epoch = m.Epoch
		}
	case End:
		ch.ended = true
	case Change:
		if c >= m.To {
			ch.ended = true // retired: its ring closes after the marker
		}
	}
	return nil
}

// Aligned carries out the release of the marker with sequence number
// seq, which every channel has delivered (the merger releases it after
// every record ordered before it), and returns it: a barrier to hand on,
// End (Done from now on), or a change, after which the channels are the
// first To of the old set, with what they delivered beyond it, and those
// added. Error: ErrNotAligned, when a channel's oldest marker is not it;
// the state is then as it was.
func (a *Aligner) Aligned(seq uint64) (Marker, error) {
	if a.done {
		return Marker{}, fmt.Errorf("%w: seq %d after End", ErrNotAligned, seq)
	}
	var m Marker
	for c := range a.ch {
		ch := &a.ch[c]
		if len(ch.q) == 0 {
			return Marker{}, fmt.Errorf("%w: seq %d, channel %d has delivered no marker", ErrNotAligned, seq, c)
		}
		h := ch.q[0]
		if c == 0 {
			m = h
		}
		if h.Seq != seq || h.Kind != m.Kind || h.Epoch != m.Epoch || h.To != m.To {
			return Marker{}, fmt.Errorf("%w: seq %d, channel %d's next is %v", ErrNotAligned, seq, c, h)
		}
	}
	if m.Kind == Barrier && m.Epoch != 0 {
		if m.Epoch <= a.epoch {
			return Marker{}, fmt.Errorf("%w: barrier %d after %d", ErrOrder, m.Epoch, a.epoch)
		}
		a.epoch = m.Epoch
	}
	for c := range a.ch {
		ch := &a.ch[c]
		ch.q = ch.q[:copy(ch.q, ch.q[1:])]
	}
	switch m.Kind {
	case End:
		a.done = true
	case Change:
		a.resize(m)
	}
	return m, nil
}

// resize makes the channel set change m's: the first m.To channels kept
// as they are, those added starting after m (its sequence number, the
// epoch last aligned).
func (a *Aligner) resize(m Marker) {
	if m.To < len(a.ch) {
		clear(a.ch[m.To:])
		a.ch = a.ch[:m.To]
	}
	for len(a.ch) < m.To {
		a.ch = append(a.ch, channel{seq: m.Seq, epoch: a.epoch})
	}
}

// Pending is the number of markers channel c delivered that are not yet
// aligned.
func (a *Aligner) Pending(c int) int { return len(a.ch[c].q) }
