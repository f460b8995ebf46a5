package runtime

import (
	"time"

	"streamd/core"
)

// Holding at a rebalance step (docs/ARCHITECTURE.md, "Rebalancing at the
// same channel count"). At a step's marker a channel that gains key groups
// needs their state, which the losing channel hands over when it reaches
// the same marker, after working through what is queued before it. When
// every stateful operator of the channel is a core.Holder, the gaining
// channel does not wait there: it releases what it loses, asks its
// operators to hold the groups it gains (HoldGroups), and goes on with the
// batches after the marker — the groups that did not move are processed,
// the held groups' records kept by the operators in arrival order. Before
// each later batch it adopts the handoffs that have arrived (without
// waiting); a batch that needs the held state (any marker but a pulse or a
// watermark every Holder calls quiet) waits for the rest first. Adopting
// the last handoff applies the held records. Nothing the channel emits
// changes: holders emit only at watermarks, and the watermarks that pass
// while holding fire nothing (Megaphone, Hoffmann et al., VLDB 2019).
//
// The pause is what the channel spends not processing because of the step:
// the marker (release, and setting up the hold), every wait for the
// handoff at a later batch, and the adoptions, including applying the held
// records (which is work the records needed anyway: counted, to be safe).
// A channel that cannot hold waits at the marker as before (migrate).

// holding is a step whose key groups channel c gains and its operators
// hold: the handoffs it still expects and its pause so far.
type holding struct {
	rc     *reconf
	left   int           // handoffs not adopted yet
	pause  time.Duration // the channel's pause in the step so far
	waited bool          // a batch had to wait for the handoff
}

// hold asks the channel's operators to hold the key groups gains. It
// answers false, having changed nothing that matters, when one of them
// cannot: a stateful operator (a Migrator, a Snapshotter or one that
// describes keyed state) that is not a Holder, or a Holder that refuses.
// Holders that accepted before one refused are ended by the adoption
// that follows at once.
func hold(insts []instance, gains []int) bool {
	holders := 0
	for _, in := range insts {
		_, mg := in.op.(core.Migrator)
		_, sn := in.op.(core.Snapshotter)
		if _, ok := in.op.(core.Holder); ok {
			holders++
		} else if mg || sn || in.def.State != "" {
			return false
		}
	}
	if holders == 0 {
		return false
	}
	for _, in := range insts {
		if h, ok := in.op.(core.Holder); ok && !h.HoldGroups(gains) {
			return false
		}
	}
	return true
}

// needsHeld says whether batch b may be processed only with the held key
// groups' state complete: anything but data, pulses and watermarks that
// every Holder calls quiet.
func needsHeld(b *core.Batch, insts []instance) bool {
	switch b.Kind {
	case core.Data, core.Pulse:
		return false
	case core.Watermark:
		for _, in := range insts {
			if h, ok := in.op.(core.Holder); ok && !h.Quiet(b.Watermark) {
				return true
			}
		}
		return false
	}
	return true
}

// settle adopts the handoffs of the step the channel holds (held) that
// have arrived, and with wait the rest too, waiting for them. Once every
// handoff is adopted it records the step's pause and clears held.
func (s *channelStage) settle(wait bool) error {
	h := s.held
	t0 := time.Now()
	for h.left > 0 {
		var ho handoff
		select {
		case ho = <-h.rc.mail[s.c]:
		default:
			if !wait {
				h.pause += time.Since(t0)
				return nil
			}
			h.waited = true
			w0 := s.sc.waitBegin()
			var err error
			ho, err = s.receive(h.rc)
			s.sc.waited(w0)
			if err != nil {
				s.held = nil
				return err
			}
		}
		adoptHandoff(ho, s.insts)
		h.left--
	}
	h.pause += time.Since(t0)
	s.r.balancePauses.record(h.pause)
	s.stats.PauseNs.Add(int64(h.pause))
	s.r.holds.Add(1)
	if h.waited {
		s.r.holdWaits.Add(1)
	}
	s.held = nil
	return nil
}

// adoptHandoff installs one handoff in the channel's Migrators.
func adoptHandoff(h handoff, insts []instance) {
	for i, in := range insts {
		if mg, ok := in.op.(core.Migrator); ok {
			mg.AdoptGroups(h.groups, h.state[i])
		}
	}
}
