package runtime

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"streamd/core"
	"streamd/core/runtime/handoff"
	"streamd/core/runtime/internal/change"
	"streamd/kvstate"
	"streamd/ring"
)

// reconf is one live change of the channel count, from the splitter's
// sequence number seq on (prepare → sync → update, docs/ARCHITECTURE.md,
// "Live channel changes"; Trisk, SoCC 2021). It is built by the source
// stage before the markers go out and is read-only afterwards.
type reconf struct {
	seq      uint64
	from, to int // channel counts
	// plan is the key groups that change owner, per channel (made in
	// prepare, so that a channel at the marker only releases and adopts).
	plan *handoff.Plan
	// mail[c] receives the handoffs of the key groups channel c gains, one
	// per channel that loses groups to it.
	mail []chan handoff.Handoff
	// outs are the merger's inputs after the change.
	outs []*ring.SPSC[*core.Batch]
	// synced is when the markers went out (clock(); with source workers,
	// when channel 0 reached the change): a channel added by
	// the change has nothing to do before, so its pause counts from here.
	synced atomic.Int64
	// spin says the machine runs every stage on its own core (GOMAXPROCS
	// above the stages): waiters poll. Otherwise polling holds a P that a
	// woken stage needs (a goroutine yielding with Gosched goes back on the
	// global run queue, which is searched before the P's own next
	// goroutine can be stolen), so waiters park at once.
	spin bool

	// With source workers: watermark is closed once channel 0 has
	// published, at the marker, the watermark state the channels added
	// start from (prevMax: the largest event time of the blocks before,
	// lastWM: the last watermark). Nil with the single source stage, whose
	// splitter knows the last watermark when it makes the change.
	watermark       chan struct{}
	prevMax, lastWM int64
	// maxTimes, for a union, is each input's largest event time at the
	// marker (inputTimes), set with prevMax.
	maxTimes []int64
}

// newReconf starts a change from channel count from to to at sequence
// number seq (balance: a rebalance step, from = to); others is how many
// stages run beside the channels. No key group moves until plan.
func newReconf(seq uint64, from, to, others int, balance bool) *reconf {
	rc := &reconf{seq: seq, from: from, to: to, plan: handoff.NewPlan(nil, from, to, balance), mail: make([]chan handoff.Handoff, max(from, to)),
		spin: runtime.GOMAXPROCS(0) > max(from, to)+others}
	for c := range rc.mail {
		rc.mail[c] = make(chan handoff.Handoff, from)
	}
	return rc
}

// moves plans which key groups move from table old to table next.
func (rc *reconf) moves(old, next *kvstate.Table) {
	rc.plan = handoff.NewPlan(kvstate.Moves(old, next), rc.from, rc.to, rc.plan.Balance())
}

// clock is the runtime's monotonic clock reading for pauses (ns since the
// process started), the readings the handoff state machine is given.
func clock() int64 { return int64(time.Since(epoch)) }

var epoch = time.Now()

// publishWatermark is channel 0's, at the marker (source workers).
func (rc *reconf) publishWatermark(prevMax, lastWM int64) {
	rc.prevMax, rc.lastWM = prevMax, lastWM
	// Channel 0 at the change: the point the markers "go out" with source
	// workers, from which a channel added counts its pause.
	rc.synced.CompareAndSwap(0, clock())
	close(rc.watermark)
}

// awaitWatermark is what a channel added with source workers does first.
func (rc *reconf) awaitWatermark(ctx context.Context) (prevMax, lastWM int64, err error) {
	select {
	case <-rc.watermark:
		return rc.prevMax, rc.lastWM, nil
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
}

// rescale changes the channel count to n, between two source batches:
// it drives the change's source side (change.Source: prepare → drain →
// sync → update) with the prepare step below.
func (s *sourceStage) rescale(n int) error {
	r, sp := s.r, s.sp
	from := len(sp.rings)
	if n < 1 || n > r.maxChannels {
		return fmt.Errorf("rescale to %d channels: allowed 1..%d", n, r.maxChannels)
	}
	err := s.change(change.New(from, n, false), func() (splitterAfter, error) {
		// Prepare: the new key-group table and the moves; new channels and
		// their rings, idle until their groups arrive.
		sp.seq++
		a := splitterAfter{rc: newReconf(sp.seq, from, n, 2, false)}
		if sp.table != nil {
			a.table = sp.table.Resize(n)
			a.rc.moves(sp.table, a.table)
		}
		a.rings = append([]*ring.SPSC[*core.Batch](nil), sp.rings[:min(from, n)]...)
		if sp.gather != nil {
			a.gather = append(a.gather, sp.gather[:min(from, n)]...)
		}
		err := r.addChannels(a.rc, sp.lastWM, func(int) (input, error) {
			rg, err := r.newRing()
			if err != nil {
				return nil, err
			}
			a.rings = append(a.rings, rg)
			ri := &ringInput{rg: rg}
			if a.gather != nil {
				ri.held = new(held)
				a.gather = append(a.gather, ri.held)
			}
			return ri, nil
		})
		return a, err
	})
	if err != nil {
		return err
	}
	r.changed(n)
	return nil
}

// splitterAfter is what the prepare step of a change on the single source
// stage makes: the change, and the splitter's rings, gathered slots and
// key-group table from the switch on.
type splitterAfter struct {
	rc     *reconf
	rings  []*ring.SPSC[*core.Batch]
	gather []*held
	table  *kvstate.Table
}

// change drives the source side of one change on the single source stage
// (ch, core/runtime/internal/change), between two source batches: it
// observes whether the old channels still work through what was pushed
// to them (during the drain only), steps ch and does what it decides —
// prepare (the caller's), a pulse at the current sequence number, a wait
// (polling: yielding for the first drainSpin, then sleeping 20 µs every
// 16 polls; the source's time counts as the drain wait), a Reconfig
// marker, a removed channel's ring closed, the switch to the new table
// and rings. It returns prepare's error, a push's, ctx's, or one when a
// channel stopped during the drain.
//
// The drain lets the old channels work off their backlog before the
// marker, so that a channel gaining key groups does not sit waiting while
// their old owner works through a full ring to reach the marker; the
// source waits (its records would have waited in the rings anyway). The
// pulse first lets the merger order every channel's output up to here,
// so that no channel stays blocked on a full output ring. FIFO order
// means an old channel at its marker has processed everything routed to
// it before.
func (s *sourceStage) change(ch *change.Source, prepare func() (splitterAfter, error)) error {
	r, sp := s.r, s.sp
	var a splitterAfter
	var t0 time.Time
	var cpu0 time.Duration
	waiting := false
	for spins := 0; ; {
		var f change.Facts
		if ch.Draining() {
			busy, err := s.busy()
			if err != nil {
				if waiting {
					s.cpu.waited(cpu0)
				}
				return err
			}
			f.Busy = busy
		}
		d := ch.Step(f)
		switch d.Action {
		case change.Prepare:
			var err error
			if a, err = prepare(); err != nil {
				return err
			}
			t0 = time.Now()
		case change.Pulse:
			m := core.NewMarker(core.Pulse)
			m.MarkSeq = sp.seq
			if err := sp.push(d.Channel, m); err != nil {
				return err
			}
		case change.Wait:
			if !waiting {
				cpu0, waiting = s.cpu.waitBegin(), true
			}
			if err := r.ctx.Err(); err != nil {
				s.cpu.waited(cpu0)
				return err
			}
			// Poll often (yielding) for the first drainSpin: a channel that
			// has finished waits for the marker spinning, and one left idle
			// longer than its ring's spin budget parks and must be woken.
			if spins&15 == 0 && time.Since(t0) > drainSpin {
				time.Sleep(20 * time.Microsecond)
			} else {
				runtime.Gosched()
			}
			spins++
		case change.Mark:
			if d.Channel == 0 {
				if waiting {
					s.cpu.waited(cpu0)
					waiting = false
				}
				if !a.rc.plan.Balance() {
					r.drains.record(time.Since(t0))
				}
				a.rc.synced.Store(clock())
			}
			m := core.NewMarker(core.Reconfig)
			m.MarkSeq, m.Control = a.rc.seq, a.rc
			if err := sp.push(d.Channel, m); err != nil {
				return err
			}
		case change.Close:
			sp.rings[d.Channel].Close()
		case change.Switch:
			sp.use(a.rings, a.gather, a.table)
			r.mergerOuts = a.rc.outs
		case change.Done:
			return nil
		}
	}
}

// addChannels is the part of prepare (a change rc from rc.from to rc.to
// channels) that the single source stage and the exchange share: the
// merger's inputs after the change (rc.outs: the kept channels' rings,
// and a new one for each channel added) and the channels added, started
// at once, each reading the input in makes for it, from watermark wm
// (core.NoTime with source workers: channel 0 publishes it at the
// change). An added channel waits for its key groups (join).
func (r *run) addChannels(rc *reconf, wm int64, in func(c int) (input, error)) error {
	from, n := rc.from, rc.to
	rc.outs = slices.Clone(r.mergerOuts[:min(from, n)])
	for c := from; c < n; c++ {
		out, err := r.newRing()
		if err != nil {
			return err
		}
		rc.outs = append(rc.outs, out)
		ci, err := in(c)
		if err != nil {
			return err
		}
		if err := r.startChannel(c, n, ci, out, wm, rc); err != nil {
			return err
		}
	}
	return nil
}

// changed counts a change to n channels.
func (r *run) changed(n int) {
	r.usedChans.Store(max(r.usedChans.Load(), int64(n)))
	r.curChans.Store(int64(n))
	r.rescales.Add(1)
}

// busy says whether an old channel has not finished every batch the
// splitter pushed to it (the drain's fact); an error when one stopped.
func (s *sourceStage) busy() (bool, error) {
	r, sp := s.r, s.sp
	busy := false
	for c, rg := range sp.rings {
		if rg.Canceled() {
			return false, fmt.Errorf("rescale: a channel stopped")
		}
		if r.chanStats[c].Batches.Load() != sp.pushed[c] {
			busy = true
		}
	}
	return busy, nil
}

// drainSpin is how long drain polls without sleeping.
const drainSpin = 2 * time.Millisecond

// migrate is what the channel does at a reconfiguration marker (its side
// of the handoff: handoff.Channel, which decides; this drives it): hand
// the key groups it loses to their new owners, then adopt those it gains.
// At a rebalance step, with canHold, a channel whose operators can hold
// the groups it gains (hold.go) does not wait for them: migrate returns
// the holding, which the channel settles later.
func (s *channelStage) migrate(rc *reconf, canHold bool) (*holding, error) {
	c, insts := s.c, s.insts
	m := handoff.At(rc.plan, c)
	lose, early := m.Mark(clock())
	for _, l := range lose {
		h := handoff.Handoff{From: c, Groups: l.Groups, State: make([]any, len(insts))}
		for i, in := range insts {
			if mg, ok := in.op.(core.Migrator); ok {
				h.State[i] = mg.ReleaseGroups(l.Groups)
			}
		}
		rc.mail[l.To] <- h // buffered for every sender: never blocks
	}
	adoptHandoffs(early, insts)
	if canHold && m.CanHold() && hold(insts, rc.plan.Gains(c)) {
		m.Hold(clock())
		return &holding{rc: rc, m: m}, nil
	}
	if err := s.adopt(rc, m); err != nil {
		return nil, err
	}
	m.Resume(clock())
	if m.Counts() {
		if rc.plan.Balance() {
			s.r.balancePauses.record(time.Duration(m.Pause()))
		} else {
			s.r.pauses.record(time.Duration(m.Pause()))
		}
		s.stats.PauseNs.Add(m.Pause())
	}
	return nil, nil
}

// join is what a channel added by the change rc does before its first
// record: adopt its key groups. Its pause counts from the markers going out
// (before that, nothing is routed to it).
func (s *channelStage) join(rc *reconf) error {
	m := handoff.Join(rc.plan, s.c)
	if err := s.adopt(rc, m); err != nil {
		return err
	}
	if synced := rc.synced.Load(); synced != 0 {
		m.Joined(synced, clock())
		s.r.pauses.record(time.Duration(m.Pause()))
		s.stats.PauseNs.Add(m.Pause())
	}
	return nil
}

// adopt waits for the handoffs of rc that m, the channel's side, still
// expects and installs them, until m is settled.
func (s *channelStage) adopt(rc *reconf, m *handoff.Channel) error {
	for !m.Settled() {
		t0 := s.sc.waitBegin()
		h, err := s.receive(rc)
		s.sc.waited(t0)
		if err != nil {
			return err
		}
		hs, err := m.Arrive(h)
		if err != nil {
			return err
		}
		adoptHandoffs(hs, s.insts)
	}
	return nil
}

// adoptSpin is how long a channel waiting for key groups keeps polling
// (yielding) after the markers went out, before it parks: the old owners
// have finished their backlog by then (the drain: sourceStage.change) and
// hand over within µs, while waking a parked goroutine costs 30–60 µs or, on a busy machine,
// a scheduler slice. A channel added by the change polls from its start,
// through the drain, up to adoptSpinMax.
const (
	adoptSpin    = 200 * time.Microsecond
	adoptSpinMax = 20 * time.Millisecond
)

// receive waits for the next handoff of rc to the channel: polling first
// (adoptSpin) where rc.spin allows, then parked, until the run stops.
func (s *channelStage) receive(rc *reconf) (handoff.Handoff, error) {
	c := s.c
	start := clock()
	for spins := 0; rc.spin; spins++ {
		select {
		case h := <-rc.mail[c]:
			return h, nil
		default:
		}
		if spins&63 == 63 {
			now := clock()
			synced := rc.synced.Load()
			if now-start > int64(adoptSpinMax) || (synced != 0 && now-synced > int64(adoptSpin)) {
				break
			}
		}
		runtime.Gosched()
	}
	select {
	case h := <-rc.mail[c]:
		return h, nil
	case <-s.r.ctx.Done():
		return handoff.Handoff{}, fmt.Errorf("channel %d: stopped while waiting for its key groups: %w", c, s.r.ctx.Err())
	}
}

// reconfOf is the reconfiguration a Reconfig marker carries (nil for any
// other batch).
func reconfOf(b *core.Batch) *reconf {
	rc, _ := b.Control.(*reconf)
	return rc
}
