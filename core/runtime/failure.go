package runtime

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"streamd/core"
	"streamd/ring"
)

// An operator in a channel that fails (a bad record under on_error: fail,
// or any error of its own) must fail the job with the error the one-channel
// run would give: that of the first failing record in input order, not of
// whichever channel got there first. The failing channel registers its
// failure with the arbiter and, from then on, only passes on what the
// others need (markers, its progress; data dropped). A failure is decided
// once every other live channel has failed too or processed everything up
// to the failing batch's last sequence number: no record before it can
// fail any more. The winner is the failure with the smallest input
// position (RecordError.Pos; failures without one come after), then the
// smallest sequence number. Any channel that finds the decision ready
// fails the run with it.

// chanFailure is one channel's failure.
type chanFailure struct {
	channel int
	pos     int64  // the record's input position, MaxInt64 if unknown
	lo, hi  uint64 // the failing batch's sequence numbers
	err     error
}

// failures is the run's arbiter of channel failures.
type failures struct {
	pending atomic.Bool // a failure is registered: channels check after each batch
	mu      sync.Mutex
	list    []chanFailure
	failed  map[int]bool
	decided bool
}

// register records channel c's failure with err on batch b.
func (r *run) registerFailure(c int, b uint64, hi uint64, err error) {
	f := chanFailure{channel: c, pos: math.MaxInt64, lo: b, hi: hi, err: err}
	var re *core.RecordError
	if errors.As(err, &re) && re.Pos > 0 {
		f.pos = re.Pos
	}
	a := &r.failures
	a.mu.Lock()
	if a.failed == nil {
		a.failed = map[int]bool{}
	}
	a.list = append(a.list, f)
	a.failed[c] = true
	a.mu.Unlock()
	a.pending.Store(true)
}

// checkFailures fails the run if a registered failure is decided. Any
// channel may call it; cheap unless a failure is pending.
func (r *run) checkFailures() {
	a := &r.failures
	if !a.pending.Load() {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.decided || len(a.list) == 0 {
		return
	}
	best := a.list[0]
	for _, f := range a.list[1:] {
		if f.pos < best.pos || (f.pos == best.pos && f.lo < best.lo) {
			best = f
		}
	}
	for c := range r.chanStats {
		st := &r.chanStats[c]
		if st.alive.Load() && !a.failed[c] && st.progress.Load() < best.hi {
			return // channel c may still fail on an earlier record
		}
	}
	a.decided = true
	err := best.err
	var re *core.RecordError
	if !errors.As(err, &re) {
		err = fmt.Errorf("channel %d: %w", best.channel, err)
	}
	r.fail(err)
	r.cancelRings()
}

// sourceFailed hands a bad record met by the source stage or a source
// worker (err, a RecordError under on_error: fail, found after every record
// with a sequence number up to hi was routed) to the arbiter instead of
// failing the run at once: a channel may still fail on an earlier record.
// pulse sends every channel a pulse at hi, so that their progress passes
// it. It returns false (the caller fails the run itself) for errors that
// name no record, or without a region.
func (r *run) sourceFailed(err error, hi uint64, pulse func() error) bool {
	var re *core.RecordError
	if r.job.Region == nil || !errors.As(err, &re) || r.ctx.Err() != nil {
		return false
	}
	r.registerFailure(-1, hi, hi, err)
	if perr := pulse(); perr != nil {
		return false
	}
	return true
}

// drainFailed is the channel's loop after its operators failed: it keeps
// passing on what the other stages wait for — markers (a Reconfig's key
// groups still move), its progress for each data batch — until the
// failure is decided, the run stops, or its input ends.
func (s *channelStage) drainFailed() {
	r, c, stats := s.r, s.c, s.stats
	for {
		r.checkFailures()
		b, err := s.in.pop(s.sc)
		if err != nil {
			return
		}
		kind, last := b.Kind, b.LastSeq()
		switch kind {
		case core.Data:
			b.Release()
			if last == 0 {
				continue
			}
			b = core.NewMarker(core.Pulse)
			b.MarkSeq = last
		case core.Reconfig:
			if _, err := s.migrate(reconfOf(b), false); err != nil {
				b.Release()
				r.fail(err)
				r.cancelRings()
				return
			}
		}
		if last > stats.progress.Load() {
			stats.progress.Store(last)
		}
		end := kind == core.End || (kind == core.Reconfig && c >= reconfOf(b).to)
		if err := s.send(b); err != nil {
			if !errors.Is(err, ring.ErrCanceled) && !errors.Is(err, ring.ErrClosed) {
				r.fail(fmt.Errorf("channel %d: %w", c, err))
			}
			return
		}
		if end {
			r.checkFailures()
			return
		}
	}
}
