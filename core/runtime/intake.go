package runtime

import (
	"fmt"
	"time"

	"streamd/core"
)

// intake is the one path a source batch takes into a source stage's
// pre-region chain, on the single source stage and on each source worker
// alike: event time and the batch's counts (admit), the cut into
// pieces when the splitter asks for it (cut.go), the push, and the
// largest event time so far, which the stage's watermark point carries
// (the single source stage's wmGen.at, a worker's candidate). The stage's
// goroutine owns it.
type intake struct {
	r     *run
	cpu   *stageCPU
	errs  *core.ErrorPolicy // the stage's policy: the job's, or a worker's deferred one
	ahead *aheadCheck       // event_time.max_ahead; nil: off
	// maxT is the largest event time admitted so far (ns; core.NoTime:
	// none), from where its stage last reset it.
	maxT int64
	// The batch being cut into pieces: read is its records as read
	// (before event time dropped any), exact that none was dropped and
	// max_ahead is off — only then may a barrier between two of its
	// pieces record a position in records (a restore there would judge
	// the rest of the batch by the median of the rest).
	read  int
	exact bool
}

// take admits source batch b (the stage's from here) and pushes it
// through push, the pre-region chain: whole, or in pieces when sp cuts
// batches (sp.cutSize; nil: a job without a region, never cut), calling
// between between two pieces with the batch's records still to come (a
// barrier may go there). A batch whose records failed event time is
// released and ok is false (nothing was pushed). A batch with dead
// letters held (a worker's deferred policy) is not cut: the merger writes
// them after every record the batch was routed with, in position order
// only if that is the whole batch. stamp is b's entry time; an error is
// admit's or push's, and stops the stage.
func (in *intake) take(b *core.Batch, sp *splitter, push func(*core.Batch) error, between func(rest int) error) (stamp int64, ok bool, err error) {
	n0 := b.Len
	if err = in.admit(b); err != nil {
		b.Release()
		return 0, false, err
	}
	if b.Len == 0 { // every record failed event_time.expr
		b.Release()
		return 0, false, nil
	}
	stamp = b.Stamp
	if k := sp.cutSize(); k > 0 && b.Len > k && in.errs.Held() == 0 {
		in.read, in.exact = n0, b.Len == n0 && in.ahead == nil
		return stamp, true, pushPieces(b, k, push, between)
	}
	return stamp, true, push(b)
}

// admit is what the intake does first with each batch its source hands
// over: set each record's event time from the event-time field or
// EventTime.Of, count the batch, stamp it with its entry time (unless the
// source did), and raise maxT to the largest event time seen. A record Of
// fails on goes to errs and leaves the batch, which may then be empty
// (Len 0: the caller releases it); an error is errs' (a
// *core.RecordError under on_error: fail), and fails the source. With
// ahead (event_time.max_ahead; nil: off) the records too far ahead are
// malformed the same way, and take no part in the largest event time.
func (in *intake) admit(b *core.Batch) error {
	r, maxT, errs, ahead, sc := in.r, in.maxT, in.errs, in.ahead, in.cpu
	before := maxT
	if f := r.timeField; f >= 0 {
		w, unit := b.Schema.Width(), r.timeUnit
		for i := 0; i < b.Len; i++ {
			t := b.Vals[i*w+f].Int() * unit
			b.Time[i] = t
			maxT = max(maxT, t)
		}
	} else if of := r.job.EventTime.Of; of != nil {
		var err error
		if maxT, err = r.timeOf(b, of, maxT, errs); err != nil {
			in.maxT = maxT
			return err
		}
	}
	if ahead != nil && (r.timeField >= 0 || r.job.EventTime.Of != nil) {
		if err := ahead.apply(b, errs); err != nil {
			in.maxT = before
			return err
		}
		maxT = before
		for _, t := range b.Time[:b.Len] {
			maxT = max(maxT, t)
		}
	}
	r.recordsIn.Add(int64(b.Len))
	r.batchesIn.Add(1)
	sc.records.Add(int64(b.Len))
	if b.Stamp == 0 {
		b.Stamp = time.Now().UnixNano()
	}
	in.maxT = maxT
	return nil
}

// timeOf sets the event time of b's records with of, dropping those it
// fails on (see admit). It allocates nothing unless of does or a record
// fails.
func (r *run) timeOf(b *core.Batch, of func([]core.Value) (int64, error), maxT int64, errs *core.ErrorPolicy) (int64, error) {
	w := b.Schema.Width()
	kept := 0
	for i := 0; i < b.Len; i++ {
		row := b.Vals[i*w : (i+1)*w : (i+1)*w]
		t, err := of(row)
		if err != nil {
			if err := errs.Bad(r.job.EventTime.Input, b.Pos[i], describeRow(b.Schema, row), fmt.Errorf("event_time: %w", err)); err != nil {
				return maxT, err
			}
			continue
		}
		b.Time[i] = t
		b.Move(kept, i)
		kept++
		maxT = max(maxT, t)
	}
	if kept < b.Len {
		b.Truncate(kept)
	}
	return maxT, nil
}
