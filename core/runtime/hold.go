package runtime

import (
	"time"

	"streamd/core"
	"streamd/core/runtime/handoff"
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
//
// What to adopt when, when the hold ends and the pause are decided by the
// channel's side of the handoff (handoff.Channel, core/runtime/handoff);
// settle only takes handoffs from the mailbox, calls the operators and
// records what the machine measured. The per-batch cost while nothing is
// in transit is the nil check of channelStage.held.

// holding is a step whose key groups the channel gains and its operators
// hold: the change (for its mailbox) and the channel's side of its
// handoff, which counts what is still in transit and the pause so far.
type holding struct {
	rc *reconf
	m  *handoff.Channel
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
// handoff is adopted (the machine is settled; the last adoption applies
// what the operators held) it records the step's pause and clears held.
func (s *channelStage) settle(wait bool) error {
	h := s.held
	m := h.m
	m.Check(clock())
	for !m.Settled() {
		var ho handoff.Handoff
		select {
		case ho = <-h.rc.mail[s.c]:
		default:
			if !wait {
				m.Resume(clock())
				return nil
			}
			m.Wait()
			w0 := s.sc.waitBegin()
			var err error
			ho, err = s.receive(h.rc)
			s.sc.waited(w0)
			if err != nil {
				s.held = nil
				return err
			}
		}
		hs, err := m.Arrive(ho)
		if err != nil {
			s.held = nil
			return err
		}
		adoptHandoffs(hs, s.insts)
	}
	m.Resume(clock())
	s.r.balancePauses.record(time.Duration(m.Pause()))
	s.stats.PauseNs.Add(m.Pause())
	s.r.holds.Add(1)
	if m.Waited() {
		s.r.holdWaits.Add(1)
	}
	s.held = nil
	return nil
}

// adoptHandoffs installs handoffs, in order, in the channel's Migrators.
func adoptHandoffs(hs []handoff.Handoff, insts []instance) {
	for _, h := range hs {
		for i, in := range insts {
			if mg, ok := in.op.(core.Migrator); ok {
				mg.AdoptGroups(h.Groups, h.State[i])
			}
		}
	}
}
