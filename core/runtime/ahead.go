package runtime

import (
	"fmt"
	"time"

	"streamd/core"
)

// aheadCheck applies event_time.max_ahead (EventTime.MaxAhead) to the
// batches a source stage or worker admits: a record whose event time is
// more than max ns ahead of its reference is malformed (the stage's
// on_error policy: counted, dead-lettered with the reason, or failing the
// job) and is dropped before it counts as read or moves the watermark.
//
// The reference never comes from the record being judged:
//
//   - For a bounded input (a Splittable source with blocks: files, a
//     seeded generator) it is the batch's robust start, the lower median
//     of the batch's event times, raised by every record the batch admits
//     (the largest admitted event time so far in the batch). The batches
//     are fixed by the input alone (core.Splittable), so the judgement is a
//     function of the input: the same for the single source stage and any
//     number of source workers, any channel count, and after a restore
//     (there is no state to carry across batches or to checkpoint). A
//     batch of one record is its own median, so it is never judged ahead.
//   - For a live input (stdin, a rate-limited generator: batches follow
//     the clock) it is processing time: the wall clock when the batch is
//     admitted.
//
// One aheadCheck per goroutine: scratch is its own. It allocates nothing
// per record (a malformed record's message excepted).
type aheadCheck struct {
	max     int64 // MaxAhead, ns, > 0
	live    bool
	input   string
	scratch []int64
}

// newAheadCheck returns the job's check for one stage or worker, nil when
// max_ahead is off.
func (r *run) newAheadCheck() *aheadCheck {
	if r.job.EventTime.MaxAhead <= 0 {
		return nil
	}
	return &aheadCheck{max: r.job.EventTime.MaxAhead, live: liveInput(r.job.Source), input: r.job.EventTime.Input,
		scratch: make([]int64, 0, core.BatchSize)}
}

// liveInput says whether s is read as a live input: not splittable into
// blocks fixed by the input.
func liveInput(s core.Source) bool {
	if rp, ok := s.(*core.Replayable); ok {
		s = rp.Source
	}
	sp, ok := s.(core.Splittable)
	return !ok || sp.Blocks() == 0
}

// apply drops b's records that are ahead (see aheadCheck), reporting each
// to errs; it returns errs' error (under Fail). b.Time must be set.
func (a *aheadCheck) apply(b *core.Batch, errs *core.ErrorPolicy) error {
	if b.Len == 0 {
		return nil
	}
	var ref int64
	if a.live {
		ref = time.Now().UnixNano()
	} else {
		a.scratch = append(a.scratch[:0], b.Time[:b.Len]...)
		ref = nth(a.scratch, (b.Len-1)/2)
	}
	kept := 0
	for i := 0; i < b.Len; i++ {
		t := b.Time[i]
		if t > ref && uint64(t-ref) > uint64(a.max) { // t-ref fits in a uint64
			w := b.Schema.Width()
			row := b.Vals[i*w : (i+1)*w : (i+1)*w]
			what := "its batch"
			if a.live {
				what = "processing time"
			}
			reason := fmt.Errorf("event_time: %s is %v ahead of %s (at %s), more than max_ahead %v",
				formatTime(t), time.Duration(t-ref), what, formatTime(ref), time.Duration(a.max))
			if err := errs.Bad(a.input, b.Pos[i], describeRow(b.Schema, row), reason); err != nil {
				return err
			}
			continue
		}
		if !a.live {
			ref = max(ref, t)
		}
		if kept != i {
			b.Move(kept, i)
		}
		kept++
	}
	if kept < b.Len {
		b.Truncate(kept)
	}
	return nil
}

// nth returns the k-th smallest of xs (0-based), reordering xs: Hoare's
// selection (C. A. R. Hoare, Algorithm 65: Find, CACM 4(7), 1961) with
// median-of-three pivots, expected O(len(xs)).
func nth(xs []int64, k int) int64 {
	lo, hi := 0, len(xs)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if xs[mid] < xs[lo] {
			xs[mid], xs[lo] = xs[lo], xs[mid]
		}
		if xs[hi] < xs[lo] {
			xs[hi], xs[lo] = xs[lo], xs[hi]
		}
		if xs[hi] < xs[mid] {
			xs[hi], xs[mid] = xs[mid], xs[hi]
		}
		p := xs[mid]
		i, j := lo, hi
		for i <= j {
			for xs[i] < p {
				i++
			}
			for xs[j] > p {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return xs[k]
		}
	}
	return xs[k]
}

// formatTime writes event time t (ns since the epoch) in RFC 3339, UTC.
func formatTime(t int64) string {
	return time.Unix(0, t).UTC().Format(time.RFC3339Nano)
}
