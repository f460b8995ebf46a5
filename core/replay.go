package core

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// Skipper is implemented by sources that can drop their next records more
// cheaply than Next returns them: a seeded generator moves its record index
// (a record is a function of it) without building records or waiting for
// its rate. Replayable uses
// it to restore a source's position; sources without it are re-read.
type Skipper interface {
	// SkipRecords drops the next n records: the records Next returns
	// afterwards are exactly those it would have returned after n more
	// (values and Pos; the batches they come in may differ). It returns
	// how many it dropped, fewer than n only with an error: io.EOF when
	// the input ends first, ctx.Err() when ctx is done. A source that
	// paces its records does not wait for the skipped ones; its pacing
	// goes on from the record after them, which is due at the next Next.
	// Malformed records among the skipped ones may go to the source's
	// ErrorPolicy as in Next (Replayable mutes it while skipping).
	SkipRecords(ctx context.Context, n int64) (int64, error)
}

// Replayable gives a deterministic source (a file, a seeded generator) a
// replay position: the number of records it has returned. A checkpoint
// records Position at its barrier; a restored job calls Skip(position)
// before the first Next, and the first Next drops that many records, so
// the source continues exactly where the checkpoint was taken. A source
// that implements Skipper drops them with SkipRecords (a generator: no
// batches, no pacing); any other is re-read and its batches dropped, which
// costs a read of the skipped input (cheap next to reprocessing it).
//
// Malformed records among the skipped ones were handled before the
// checkpoint (dead-lettered and counted): with MuteWhileSkipping, the job's
// ErrorPolicy is muted while the Replayable skips, so that they are not
// handled twice. The ones after the position, up to where the job stopped,
// are handled again (at least once). Exact for sources whose batches are
// the same on every read (every file source: a checkpoint's position is
// then where one of its batches ended); with a source that batches
// differently on the re-read, malformed records the source meets while
// reading the batch the position falls in count as before it.
//
// Not for stdin or other sources that cannot be read twice.
type Replayable struct {
	Source
	pos  int64
	skip int64
	// drop, after skip, is the records to drop from the batches read
	// next (SkipInBatch): those of the position's batch before it.
	drop int64
	errs *ErrorPolicy // muted while skipping
}

// NewReplayable wraps src.
func NewReplayable(src Source) *Replayable { return &Replayable{Source: src} }

// Position is the number of records returned so far (including skipped
// ones).
func (r *Replayable) Position() int64 { return r.pos }

// Skip makes the next calls to Next drop the first n records. It must be
// called before the first Next.
func (r *Replayable) Skip(n int64) error {
	if r.pos != 0 {
		return fmt.Errorf("skip %d records: the source has already returned %d", n, r.pos)
	}
	if n < 0 {
		return fmt.Errorf("skip %d records: negative", n)
	}
	r.skip = n
	return nil
}

// SkipInBatch is Skip(n) for a position k records into one of the
// source's batches (a checkpoint taken between two pieces of a batch,
// runtime/cut.go): it skips the n − k records before that batch (by
// SkipRecords when the source has it) and then drops the first k
// records of the batches read next, so that the rest of the position's
// batch comes as one batch, as in the uninterrupted run, for sources whose
// batches are the same on every read; after SkipRecords, a source such as
// a generator would otherwise start its batches at the position. It
// must be called before the first Next.
func (r *Replayable) SkipInBatch(n, k int64) error {
	if k < 0 || k > n {
		return fmt.Errorf("skip %d records, %d of them in the position's batch: out of range", n, k)
	}
	if err := r.Skip(n - k); err != nil {
		return err
	}
	r.drop = k
	return nil
}

// MuteWhileSkipping makes the Replayable mute p (ErrorPolicy.Mute) while it
// skips the records before the position. The runtime gives it the job's
// policy. A nil Replayable does nothing.
func (r *Replayable) MuteWhileSkipping(p *ErrorPolicy) {
	if r != nil {
		r.errs = p
	}
}

// Next returns the next batch after the skipped records. The first call
// after Skip drops them first: it returns an error if the input ends
// before (or ctx.Err(), and a later call goes on skipping).
func (r *Replayable) Next(ctx context.Context) (*Batch, error) {
	if r.skip > 0 {
		b, err := r.skipToPosition(ctx)
		if err != nil || b != nil {
			return b, err
		}
	}
	if r.drop > 0 {
		r.skip, r.drop = r.drop, 0
		b, err := r.dropRead(ctx)
		if err != nil || b != nil {
			return b, err
		}
	}
	b, err := r.Source.Next(ctx)
	if err != nil {
		return nil, err
	}
	r.pos += int64(b.Len)
	return b, nil
}

// skipToPosition drops the r.skip records before the position, with the
// policy muted. Re-reading a source without Skipper, it returns the rest of
// the batch the position falls in, if it falls inside one.
func (r *Replayable) skipToPosition(ctx context.Context) (*Batch, error) {
	if r.errs != nil {
		r.errs.Mute()
		defer r.errs.Unmute()
	}
	if s, ok := r.Source.(Skipper); ok {
		n, err := s.SkipRecords(ctx, r.skip)
		r.skip -= n
		r.pos += n
		switch {
		case errors.Is(err, io.EOF):
			return nil, r.ended()
		case err != nil:
			return nil, err
		case r.skip != 0:
			return nil, fmt.Errorf("replay: the source skipped %d records of %d", n, n+r.skip)
		}
		return nil, nil
	}
	return r.dropRead(ctx)
}

// dropRead drops the r.skip records before the position by reading them
// (the policy muted by its caller) and returns the rest of the batch the
// position falls in, if it falls inside one.
func (r *Replayable) dropRead(ctx context.Context) (*Batch, error) {
	if r.errs != nil {
		r.errs.Mute()
		defer r.errs.Unmute()
	}
	for r.skip > 0 {
		b, err := r.Source.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil, r.ended()
		}
		if err != nil {
			return nil, err
		}
		if r.skip >= int64(b.Len) {
			r.skip -= int64(b.Len)
			r.pos += int64(b.Len)
			b.Release()
			continue
		}
		k := int(r.skip)
		for i := k; i < b.Len; i++ {
			b.Move(i-k, i)
		}
		b.Truncate(b.Len - k)
		r.pos += int64(k + b.Len)
		r.skip = 0
		return b, nil
	}
	return nil, nil
}

func (r *Replayable) ended() error {
	return fmt.Errorf("replay: the input ended %d records before the checkpoint's position", r.skip)
}

// Resumer is a source whose replay position needs more than a record
// count: a followed file, whose records before the position may have
// been rotated away or truncated, so that re-reading the input from its
// start cannot find them. The runtime records ResumeState beside the
// Replayable's position in every checkpoint (metadata extra
// "source_state") and, on restore, calls Resume with it before
// Replayable.Skip; the source then skips to the position by the state
// (it must implement Skipper), or refuses what it cannot resume.
type Resumer interface {
	// ResumeState describes the position after the last batch Next
	// returned; called on the goroutine that calls Next, between calls.
	ResumeState() (string, error)
	// Resume takes the state of the checkpoint being restored, before
	// the first Next. It returns an error, naming the file and what
	// changed, when the input no longer holds the records after the
	// position: the restore is refused rather than lose them.
	Resume(state string) error
}
