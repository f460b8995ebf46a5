package runtime

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"streamd/ring"
)

// A stage that finds its ring cancelled after the run's context was
// cancelled (Ctrl-C, Live.Stop) reports an interruption, not its ring: the
// teardown then returns ErrInterrupted whichever stage noticed first. A
// first error stays the run's error.
func TestFailRingCanceledAfterCancelIsInterrupted(t *testing.T) {
	ringErr := fmt.Errorf("channel 3 stopped: %w", ring.ErrCanceled)

	r := &run{}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.cancel()
	r.fail(ringErr)
	if !errors.Is(r.firstErr(), context.Canceled) || !errors.Is(r.firstErr(), ring.ErrCanceled) {
		t.Errorf("after a cancel: %v, want context.Canceled wrapping the ring's error", r.firstErr())
	}

	cause := errors.New("no room for a channel")
	r = &run{}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.fail(cause)
	r.fail(ringErr)
	if r.firstErr() != cause {
		t.Errorf("after a failure: %v, want %v", r.firstErr(), cause)
	}

	// Before any cancel a cancelled ring is reported as it is.
	r = &run{}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.fail(ringErr)
	if errors.Is(r.firstErr(), context.Canceled) {
		t.Errorf("no cancel: %v, want the ring's error", r.firstErr())
	}
}
