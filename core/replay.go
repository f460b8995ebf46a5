package core

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// Replayable gives a deterministic source (a file, a seeded generator) a
// replay position: the number of records it has returned. A checkpoint
// records Position at its barrier; a restored job calls Skip(position)
// before the first Next, and the source re-reads and drops that many
// records, so it continues exactly where the checkpoint was taken.
// Replaying costs a read of the skipped input (cheap next to reprocessing
// it); sources with random access can implement a faster skip later behind
// the same API.
//
// Not for stdin or other sources that cannot be read twice. A record the
// error policy dead-lettered before the position is dead-lettered again on
// replay only if it lies after the position.
type Replayable struct {
	Source
	pos  int64
	skip int64
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

// Next returns the next batch after the skipped records.
func (r *Replayable) Next(ctx context.Context) (*Batch, error) {
	for {
		b, err := r.Source.Next(ctx)
		if err != nil {
			if r.skip > 0 && errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("replay: the input ended %d records before the checkpoint's position", r.skip)
			}
			return nil, err
		}
		if r.skip >= int64(b.Len) {
			r.skip -= int64(b.Len)
			r.pos += int64(b.Len)
			b.Release()
			continue
		}
		if k := int(r.skip); k > 0 {
			for i := k; i < b.Len; i++ {
				b.Move(i-k, i)
			}
			b.Truncate(b.Len - k)
			r.pos += int64(k)
			r.skip = 0
		}
		r.pos += int64(b.Len)
		return b, nil
	}
}
