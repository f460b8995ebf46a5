package runtime

import (
	"errors"
	"fmt"
	"time"

	"streamd/core"
	"streamd/core/runtime/logic"
	"streamd/ring"
)

// channelStage is channel c of the parallel region: it pops batches from
// its input (the splitter's ring, or its side of the exchange), pushes
// them through the fused region operators, and pushes what they emit to
// its output ring, which the merger reads. It takes the channel's part in
// every protocol that reaches it in-band: checkpoint barriers (barrier),
// live channel changes and rebalance steps (reconfig, join, settle:
// rescale.go, hold.go), updates of logic (update), the merger's ordering
// (progress and pulses) and operator failures (failed: failure.go).
//
// startChannel sets r, c, in, out, addedBy, stats, errs and sc before the
// channel's goroutine starts; from then on every field belongs to that
// goroutine. What is global (failing the run, the rings, the checkpoint
// coordinator, the dead letters' queue, the doorbell) is r's.
type channelStage struct {
	// pending, progress, cur and idle are written per batch by the
	// channel's goroutine: the padding at both ends keeps every other
	// object, another goroutine's hot data included, off their cache lines
	// (as core.OwnLines does for slices).
	_ [core.CacheLine]byte

	r   *run
	c   int
	in  input
	out *ring.SPSC[*core.Batch]
	// addedBy, for a channel added by a reconfiguration, is that
	// reconfiguration: the channel adopts its key groups before its first
	// batch (join). Nil for the channels the run starts with.
	addedBy *reconf
	stats   *ChannelStats     // &r.chanStats[c]
	sc      *stageCPU         // the channel's CPU account
	errs    *core.ErrorPolicy // its operators' dead letters: a Deferred policy, handed to the merger in order (letters.go)
	// insts are the region's operator instances (an update swaps one in
	// place), chain them followed by final.
	insts []instance
	chain *core.Chain
	// logic is the epoch of the logic insts run: the updates placed
	// before the channel started, then those whose markers it met.
	logic logic.Follower
	db    *debloater // out's effective capacity (debloat.go); nil when debloating is off
	// gl is the channel's count of records per key group, which the
	// balancer reads (balance.go); nil without rebalancing.
	gl *groupLoad
	// held is a rebalance step whose key groups the channel gains and its
	// operators hold (hold.go); nil when none is in transit.
	held *holding

	// pending is the last data batch the operators emitted for the batch
	// being processed, not sent yet: it goes when the operators emit
	// another batch or a marker, or when the batch being processed is
	// done, so that it carries that batch's progress.
	pending *core.Batch
	// progress is the last sequence number the channel has processed; cur
	// the last sequence number of the batch being processed.
	progress, cur uint64
	idle          int // data batches processed since the channel last sent anything (pulseEvery)

	_ [core.CacheLine]byte
}

// startChannel instantiates the region's operators for channel c of n and
// starts its stage. join, for a channel added by a reconfiguration, is that
// reconfiguration: the channel adopts its key groups before it starts.
// With source workers (join.watermark set) the watermark the channel starts
// at (wm) is known only when channel 0 reaches the change's marker: the
// channel's goroutine waits for it, then instantiates the operators.
func (r *run) startChannel(c, n int, in input, out *ring.SPSC[*core.Batch], wm int64, join *reconf) error {
	s := &channelStage{r: r, c: c, in: in, out: out, addedBy: join, stats: &r.chanStats[c]}
	return s.start(n, wm)
}

// start is startChannel's work: it registers the channel's input, marks
// the channel alive and starts its goroutine, which runs loop.
func (s *channelStage) start(n int, wm int64) error {
	r, c, join := s.r, s.c, s.addedBy
	s.errs = r.job.Errors.Deferred() // handed to the merger in order (letters.go)
	env := core.Env{Channel: c, Channels: n, Errors: s.errs, Watermark: wm, Rescaled: join != nil || r.restore != nil}
	var set *instSet
	ops := r.chanOps // as of the call: a later update reaches the channel as a marker
	s.logic = r.logic.Follow(logic.Region)
	if join == nil || join.watermark == nil {
		var err error
		if set, err = r.instantiate(ops, env, r.regionCounters); err != nil {
			return err
		}
	}
	r.ringsMu.Lock()
	for len(r.chanIn) <= c {
		r.chanIn = append(r.chanIn, nil)
	}
	r.chanIn[c] = s.in
	r.ringsMu.Unlock()
	// Alive from now, not from when its goroutine runs: a failure must
	// wait for a channel that has not started yet (failure.go).
	st := s.stats
	st.progress.Store(0)
	if join != nil {
		st.progress.Store(join.seq)
	}
	st.alive.Store(true)
	r.wg.Add(1)
	s.sc = r.newReplicatedStageCPU("channel", c)
	r.placer.Start("channel", c, func() {
		defer r.wg.Done()
		defer r.recoverStage("channel", c)
		s.sc.begin()
		defer s.sc.end()
		if set == nil {
			var err error
			if set, err = s.instantiateAtChange(ops, env); err != nil {
				r.fail(fmt.Errorf("channel %d: %w", c, err))
				r.cancelRings()
				return
			}
		}
		defer func() {
			if err := r.closeSet(set); err != nil {
				r.fail(fmt.Errorf("channel %d: %w", c, err))
			}
		}()
		s.insts = set.insts
		s.loop()
	})
	return nil
}

// instantiateAtChange is what a channel added with source workers does
// first, on its goroutine: it waits until channel 0 has published, at the
// change's marker, the watermark state the added channels start from,
// sets its input's watermark state (a *blockInput) to it, and instantiates
// ops, the region's operators as of startChannel, at that watermark (env
// is startChannel's, whose Watermark is replaced).
func (s *channelStage) instantiateAtChange(ops []core.OperatorDef, env core.Env) (*instSet, error) {
	bi := s.in.(*blockInput)
	var err error
	if bi.wm.prevMax, bi.wm.last, err = s.addedBy.awaitWatermark(s.r.ctx); err != nil {
		return nil, err
	}
	if bi.wm.times != nil {
		bi.wm.times.set(s.addedBy.maxTimes)
	}
	env.Watermark = bi.wm.last
	return s.r.instantiate(ops, env, s.r.regionCounters)
}

// loop runs the channel: pop, process through the fused region operators,
// push to the merger's ring, until End, a reconfiguration that retires the
// channel, its input's end without End (a stage failed), or an error.
// Its operators' dead letters (errs) are handed to the merger before
// anything the channel sends after them. Whatever the way out, stop runs.
func (s *channelStage) loop() {
	r, in, sc, stats := s.r, s.in, s.sc, s.stats
	s.db = r.newDebloater()
	s.chain = chainOf(s.insts, s.final)
	defer s.stop()
	if !s.begin() {
		return
	}
	sc.publishWork(&stats.CPUNs)
	for {
		b, err := in.pop(sc)
		if err != nil {
			return // closed without End: the source failed and said so
		}
		kind, last, n := b.Kind, b.LastSeq(), b.Len
		lo := last
		if kind == core.Data && n > 0 {
			lo = b.Seq[0]
		}
		s.cur = last
		if s.held != nil { // a step's key groups in transit (hold.go)
			if err = s.settle(needsHeld(b, s.insts)); err != nil {
				s.abort(b, err)
				return
			}
		}
		var retire bool
		if kind == core.Reconfig {
			if retire, err = s.reconfig(reconfOf(b)); err != nil {
				s.abort(b, err)
				return
			}
		}
		if kind == core.Update {
			if err := s.update(updateOf(b)); err != nil {
				s.abort(b, err)
				return
			}
		}
		if kind == core.Barrier && r.ck != nil {
			s.barrier(barrierOf(b))
		}
		if s.gl != nil && kind == core.Data {
			s.gl.count(b)
		}
		t0 := time.Now()
		err = s.chain.Push(b)
		if kind == core.Data {
			t1 := time.Now()
			stats.BusyNs.Add(int64(t1.Sub(t0)))
			sc.tick(t1) // CPUNs
			stats.Records.Add(int64(n))
		}
		if s.gl != nil {
			s.gl.serve(s.insts)
		}
		stats.Batches.Add(1)
		if err == nil && kind == core.Data {
			s.progress = last
			if s.pending != nil {
				err = s.flush()
			} else if s.idle++; s.idle >= pulseEvery {
				// Nothing sent for a while: a pulse tells the merger the
				// channel's progress.
				s.idle = 0
				m := core.NewMarker(core.Pulse)
				m.MarkSeq = s.progress
				err = s.send(m)
			}
		} else if kind != core.Data && last > s.progress {
			s.progress = last
		}
		if err != nil {
			if errors.Is(err, ring.ErrCanceled) || errors.Is(err, ring.ErrClosed) {
				in.Cancel()
				return
			}
			s.failed(lo, last, err)
			return
		}
		stats.progress.Store(s.progress)
		r.checkFailures()
		if kind == core.End || retire {
			return
		}
	}
}

// begin prepares the channel's state before its first batch: its count of
// records per key group (with rebalancing), then the state of the key
// groups it owns, from the restored checkpoint (restoreChannel) or, for a
// channel added by a reconfiguration, adopted from their old owners
// (join). On an error it fails the run, cancels the input and returns
// false.
func (s *channelStage) begin() bool {
	r, c, join := s.r, s.c, s.addedBy
	if r.bal != nil {
		start := r.initialTable
		if join != nil {
			start = nil // it owns what it adopts
		}
		s.gl = newGroupLoad(r.job.Region.Groups, start, c)
		r.loads[c].Store(s.gl)
	}
	if r.restore != nil && join == nil {
		if err := restoreChannel(r.restore, s.insts, r.initialTable, c); err != nil {
			r.fail(err)
			s.in.Cancel()
			return false
		}
	}
	if join != nil {
		s.progress = join.seq
		if err := s.join(join); err != nil {
			r.fail(err)
			s.in.Cancel()
			return false
		}
		if s.gl != nil {
			s.gl.moved(nil, join.plan.Gains(c))
		}
	}
	return true
}

// reconfig is the channel at a reconfiguration's marker (a live channel
// change or a rebalance step): it hands over the key groups it loses and
// adopts those it gains (migrate; at a step, its operators may hold them
// instead: held), moves them in its key-group count, and says whether the
// change retires the channel (its index is not below the new count: the
// marker is the last batch it processes).
func (s *channelStage) reconfig(rc *reconf) (retire bool, err error) {
	if s.held, err = s.migrate(rc, true); err != nil {
		return false, err
	}
	if s.gl != nil {
		s.gl.moved(rc.plan.Losses(s.c), rc.plan.Gains(s.c))
	}
	return s.c >= rc.to, nil
}

// update is the channel at an update's marker (update.go): its operators
// take the new logic when the update targets the region, and the chain is
// rebuilt over them.
func (s *channelStage) update(u *update) error {
	env := core.Env{Channel: s.c, Channels: int(s.r.curChans.Load()), Errors: s.errs}
	if u == nil {
		return fmt.Errorf("channel %d: an Update marker without its update", s.c)
	}
	swapped, err := meet(&s.logic, s.insts, u, env)
	if err != nil {
		return fmt.Errorf("channel %d: %w", s.c, err)
	}
	if swapped {
		s.chain = chainOf(s.insts, s.final)
	}
	return nil
}

// barrier takes the channel's state at a checkpoint barrier
// (snapshotChannel) and counts the time it took as a checkpoint pause.
func (s *channelStage) barrier(info *barrierInfo) {
	ck := s.r.ck
	t0 := time.Now()
	snapshotChannel(info, s.insts, s.c, ck.acks, &s.r.wg, ck.stall)
	ck.pause(time.Since(t0))
}

// abort stops the channel on a protocol's error at batch b, which it
// releases: the run fails with err and the channel's input is cancelled.
// The loop returns next.
func (s *channelStage) abort(b *core.Batch, err error) {
	b.Release()
	s.r.fail(err)
	s.in.Cancel()
}

// failed is the channel after its operators failed (err) on the batch of
// sequence numbers lo to last: the first failure in input order fails the
// job, whichever channel meets it first (failure.go). It drops the batch
// not sent yet, registers the failure and passes on what the other stages
// wait for until the failure is decided (drainFailed).
func (s *channelStage) failed(lo, last uint64, err error) {
	s.pending.Release()
	s.pending = nil
	s.r.registerFailure(s.c, lo, max(last, s.progress), err)
	s.drainFailed()
}

// stop ends the channel, however its loop ended: it is no longer alive for
// the failure arbiter (a failure may have waited for it), and its output
// ring is closed, which the merger reads as the channel's end (after End
// or a retiring reconfiguration) or as a failure (without).
func (s *channelStage) stop() {
	s.stats.alive.Store(false)
	s.r.checkFailures() // a failure may have waited for this channel
	s.out.Close()
	s.r.bell.ring()
}

// send pushes b, which it owns, to the merger's ring, after the dead
// letters of the records up to the channel's progress (or the batch being
// processed) and with the channel's index; it waits while the ring is full
// (or above the debloater's limit), and rings the merger's doorbell. On an
// error (the ring cancelled or closed) b is released.
func (s *channelStage) send(b *core.Batch) error {
	s.r.letters.add(s.errs, max(s.progress, s.cur))
	b.Channel = s.c
	var err error
	if s.db != nil {
		_, err = s.db.push(s.sc, 0, s.out, b)
	} else {
		_, err = s.sc.push(s.out, b)
	}
	if err != nil {
		b.Release()
		return err
	}
	s.r.bell.ring()
	return nil
}

// flush sends the pending batch, if any, with the channel's progress.
func (s *channelStage) flush() error {
	if s.pending == nil {
		return nil
	}
	b := s.pending
	s.pending = nil
	b.Progress = s.progress
	s.idle = 0
	return s.send(b)
}

// final is the chain's last step: it takes each batch the operators emit
// (with ownership). A data batch waits as pending (the one pending before
// it goes), so that the last one of an input batch carries that batch's
// progress; a marker goes at once, after the pending batch.
func (s *channelStage) final(b *core.Batch) error {
	if b.Kind == core.Data {
		if s.pending != nil {
			if err := s.send(s.pending); err != nil {
				b.Release()
				return err
			}
		}
		b.Progress = s.progress
		s.pending = b
		return nil
	}
	if err := s.flush(); err != nil {
		b.Release()
		return err
	}
	s.idle = 0
	return s.send(b)
}
