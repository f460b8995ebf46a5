package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"streamd/core"
	"streamd/core/runtime/internal/endinput"
	"streamd/core/runtime/logic"
)

// sourceStage is the single source stage, the job's first stage when it
// runs without source workers: one goroutine reads the source's batches,
// stamps their event time, generates watermarks (bounded
// out-of-orderness) and feeds the pre-region chain, whose last step is the
// splitter (or, without a region, the post-region chain or the output
// workers). Between two source batches it serves the protocols that need
// a point in its input: checkpoint barriers, control requests (channel
// changes, checkpoints, updates), the region's own controller and
// rebalance steps. At the input's end it keeps checkpointing while the
// region drains (endOfInput), then sends End.
//
// Everything but r is the stage's own: set by build (set, replay, wm,
// cpu) and launch (src, sp, head, pre) before its goroutine starts, then
// written by that goroutine alone. It is allocated on cache lines of its
// own (newSourceStage): its goroutine writes it per batch.
type sourceStage struct {
	r *run // what is global: the job, errors, rings, checkpoints, control

	// src is the job's source: the replay wrapper (replay) when the job
	// checkpoints.
	src    core.Source
	replay *core.Replayable
	// set is the pre-region operators' instances (with the region's local
	// step last, if any); pre is their chain ending in head, rebuilt when
	// an update replaces one of them (serveControl); logic the epoch of
	// the logic they run (the zero value: a pre-region stage at the run's
	// start).
	set   *instSet
	pre   *core.Chain
	head  func(*core.Batch) error
	logic logic.Follower
	// sp is the splitter (run.splitter), nil without a region.
	sp  *splitter
	cpu *stageCPU // the stage's CPU account
	// in is the stage's intake of source batches (intake.go); in.maxT
	// the largest event time read (for a union, the current batch's:
	// wm.times keeps each input's).
	in intake
	// wm is the watermark generator (watermark.go), its one block the
	// whole input.
	wm wmGen
	// stamp is the current batch's entry time (the idle read's, for a
	// live source that gave none), which a barrier injected after it
	// carries.
	stamp int64

	// Pieces (cut.go): between two pieces of a batch, a barrier due by
	// the clock goes there when the batch's records are as read (none
	// failed event time or max_ahead: in.exact) and the source is one
	// whose batches follow the clock (a restore there re-reads the rest
	// of the batch in other batches, as any restore of such a source
	// does), not a union and not a core.Resumer (whose state is a batch's
	// end): piecesBarriers says the source is such. between is
	// betweenPieces, bound once so that the loop allocates no closure per
	// batch.
	piecesBarriers bool
	between        func(rest int) error
}

// newSourceStage makes the single source stage's account and
// instantiates its pre-region operators (build; env is the stage's). The
// stage has cache lines of its own: its goroutine writes it per batch,
// and a small heap object beside it may be another stage's hot data.
func (r *run) newSourceStage(env core.Env) (*sourceStage, error) {
	s := &core.OwnLines[sourceStage](1)[0]
	s.r = r
	s.wm = newWMGen(r.job.EventTime.MaxOutOfOrder, core.NoTime, r.job.Source) // before a Replayable wraps it
	s.cpu = r.newStageCPU("source", 0)
	s.in = intake{r: r, cpu: s.cpu, errs: r.job.Errors}
	var err error
	s.set, err = r.instantiate(r.preDefs, env, r.preCounters)
	return s, err
}

// launch starts the stage's goroutine; head is the pre-region chain's
// last step. The job's source and the splitter are final by now.
func (s *sourceStage) launch(head func(*core.Batch) error) {
	r := s.r
	s.src, s.sp, s.head = r.job.Source, r.splitter, head
	s.pre = chainOf(s.set.insts, head)
	r.wg.Add(1)
	r.placer.Start("source", 0, func() {
		defer r.wg.Done()
		defer r.recoverStage("source", 0)
		s.cpu.begin()
		defer s.cpu.end()
		s.loop(r.ctx)
	})
}

// loop is the stage's goroutine: it reads and pushes batches until the
// input ends, an error stops it or ctx is cancelled, then ends the stage.
func (s *sourceStage) loop(ctx context.Context) {
	r := s.r
	s.replay.MuteWhileSkipping(r.job.Errors) // malformed records before a restored position were handled
	s.in.maxT, s.wm.last = core.NoTime, r.startWM
	if r.restore != nil {
		fmt.Sscan(r.restore.Meta.Extra["max_event_time"], &s.in.maxT)
	}
	s.in.ahead = r.newAheadCheck()
	s.piecesBarriers = s.replay != nil && liveInput(s.replay.Source) && s.wm.times == nil && s.in.ahead == nil
	if s.replay != nil {
		if _, resumer := s.replay.Source.(core.Resumer); resumer {
			s.piecesBarriers = false
		}
	}
	s.between = s.betweenPieces
	var err error
	for {
		if sp := s.sp; sp != nil && sp.gather != nil {
			// Before the source may block: what a waiting channel should
			// have goes now (batching.go).
			if err = sp.settle(); err != nil {
				break
			}
		}
		var b *core.Batch
		b, err = s.src.Next(ctx)
		idle := errors.Is(err, core.ErrIdle) // a live source waited and nothing came
		if err != nil && !idle {
			break
		}
		err = nil
		s.stamp = time.Now().UnixNano()
		if !idle {
			var empty bool
			if empty, err = s.push(b); err != nil {
				break
			}
			if empty {
				continue
			}
		}
		if err = s.betweenBatches(); err != nil {
			break
		}
		if ctx.Err() != nil {
			err = ctx.Err()
			break
		}
	}
	s.end(ctx, err)
}

// push takes b in (intake.take: event time, counts, entry time; in
// pieces when the splitter cuts batches, cut.go), then pushes the
// watermark it advances. It returns empty, with b released, when every
// record failed event time (nothing was pushed); an error stops the
// stage.
func (s *sourceStage) push(b *core.Batch) (empty bool, err error) {
	var pos0 int64 // a union's block (core.Interleaved)
	if s.wm.times != nil && b.Len > 0 {
		pos0 = b.Pos[0]
	}
	stamp, ok, err := s.in.take(b, s.sp, s.pre.Push, s.between)
	if err != nil || !ok {
		return err == nil, err
	}
	s.stamp = stamp
	return false, s.watermark(pos0)
}

// watermark pushes a Watermark marker when the batch just pushed (its
// first record at pos0) advanced the watermark (wmGen.at: the stage's
// input is one block; a union's batch is one block of the interleave).
func (s *sourceStage) watermark(pos0 int64) error {
	wm, ok := s.wm.at(int(pos0>>core.PosFileShift), s.in.maxT)
	if s.wm.times != nil {
		s.in.maxT = core.NoTime // a union's points are each batch's largest
	}
	if !ok {
		return nil
	}
	m := core.NewMarker(core.Watermark)
	m.Watermark, m.Stamp = wm, s.stamp
	return s.pre.Push(m)
}

// betweenBatches serves, after a source batch (or an idle read), the
// protocols that go between two batches: a checkpoint barrier that is
// due, then the changes, in the order both source paths serve them
// (serveChanges; the stage is the change point). An error is fatal: the
// stage stops.
func (s *sourceStage) betweenBatches() error {
	r := s.r
	if r.ck != nil && r.ck.due() {
		if err := s.injectBarrier(s.stamp, 0, 0); err != nil {
			return err
		}
	}
	return r.serveChanges(s, true)
}

// betweenPieces is what the stage does between two pieces of a batch
// (pushPieces), rest records of it still to come: inject a barrier due by
// the clock, when piecesBarriers and the batch (in.exact) allow it (a
// barrier due by a count of batches, EveryBatches, does not go between
// pieces).
func (s *sourceStage) betweenPieces(rest int) error {
	r := s.r
	if !s.piecesBarriers || !s.in.exact || r.ck == nil || !r.ck.dueByClock() {
		return nil
	}
	return s.injectBarrier(s.stamp, int64(rest), int64(s.in.read-rest))
}

// end is the stage's last step, after its loop stopped with err. At the
// input's end (io.EOF) the splitter flushes what it gathers and the
// stage checkpoints the drain (endOfInput); then, with no error, End goes
// down the pre-region chain. A bad record met under on_error: fail goes
// to the failure arbiter (failure.go), whose first in input order fails
// the job; any other error fails the run and cancels every ring.
func (s *sourceStage) end(ctx context.Context, err error) {
	r := s.r
	if errors.Is(err, io.EOF) {
		err = nil
		r.endUpdates()
		if s.sp != nil {
			err = s.sp.flushAll() // endOfInput waits for the rings to drain
		}
		if err == nil {
			err = s.endOfInput(ctx)
		}
	}
	if err == nil {
		end := core.NewMarker(core.End)
		end.Stamp = time.Now().UnixNano()
		err = s.pre.Push(end)
	}
	if err != nil && s.sp != nil && r.sourceFailed(err, s.sp.seq, func() error { return s.sp.pulseAll(s.sp.seq) }) {
		return // a bad record: the first in input order fails the job (failure.go)
	}
	if err != nil {
		// Every stage stops: cancel every ring ever made, including those
		// of channels a live change was adding (not yet the splitter's).
		r.fail(err)
		r.cancelRings()
	}
}

// injectBarrier starts the next checkpoint: a barrier after every record
// the stage has pushed, carrying stamp, recording the replay position
// (records read, less back: the records of the batch being cut into
// pieces that come after the barrier, cut.go; k those before it) and the
// watermark generator's state (between pieces, maxT is the whole batch's,
// as the exchange's midBarrier records).
func (s *sourceStage) injectBarrier(stamp, back, k int64) error {
	info := s.r.startCheckpoint()
	info.position, info.batchRecords, info.block = s.replay.Position()-back, k, -1
	info.maxTime, info.wm = s.in.maxT, s.wm.last
	if s.wm.times != nil {
		info.maxTimes = s.wm.times.String()
	}
	if rs, ok := s.replay.Source.(core.Resumer); ok {
		var err error
		if info.state, err = rs.ResumeState(); err != nil {
			return err
		}
	}
	return s.pre.Push(barrierMarker(info, stamp))
}

// endOfInput is what the stage does between its source's end and the End
// marker when the job checkpoints: while the rings from the splitter to
// the merger still hold batches (operators still work, maybe for
// seconds), it injects the barriers that come due, so a long drain is
// checkpointed too. Such a barrier records the end of the input
// (position: every record read); a restore from it reads nothing and
// resumes with the restored state, the watermark and End. End goes once
// those rings are empty (or cancelled): what is left then is the batch
// each channel holds and the merger's and the sink's work, which a
// barrier after End could not cover anyway. The stage drives the protocol
// (endinput.Tail) as its one channel, polling while it says wait. It
// returns ctx's error if the run stops, or the push's.
func (s *sourceStage) endOfInput(ctx context.Context) error {
	if s.r.ck == nil || s.sp == nil {
		return nil
	}
	tail := endinput.New(math.MaxInt)
	for p := newPoll(); ; p.wait() {
		switch tail.Step(0, endinput.Facts{Channels: 1, RingsHold: s.draining(), Due: s.r.ck.dueByClock()}).Action {
		case endinput.Close:
			return nil
		case endinput.Place:
			if err := s.injectBarrier(time.Now().UnixNano(), 0, 0); err != nil {
				return err
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// draining says whether a ring from the splitter to the channels or from
// the channels to the merger still holds batches.
func (s *sourceStage) draining() bool {
	return ringsHold(s.sp.rings) || ringsHold(s.r.mergerOuts)
}

// position is how many input records the stage has read.
func (s *sourceStage) position() int64 {
	if s.replay != nil {
		return s.replay.Position()
	}
	return s.r.recordsIn.Load()
}
