package runtime

import (
	"container/heap"
	"sync"
	"sync/atomic"

	"streamd/core"
)

// Dead letters from the channels, in input order (docs/ARCHITECTURE.md,
// "Errors and shutdown").
//
// A channel's operators report late records and bad records to a Deferred
// policy of the channel's own. After each batch the channel hands what it
// holds to the run's letterQueue, each line tagged with the channel's
// progress (the last sequence number it has processed) — before it sends
// the batch's output, pulse or marker to the merger. The merger writes the
// lines in the order of their records' input positions, and writes a line
// only once it has emitted its tag: by then every channel has processed
// everything up to the tag (a channel's output at sequence number s comes
// after all its input up to s) and handed over its lines, so no line of an
// earlier record can still come. The file is therefore the same for any
// channel count and source parallelism. Positions order the records of
// one input (row or line numbers; a source of several files puts the
// file's ordinal in the high bits, core.PosFileShift); jobs of several
// sources will need the sequence number itself.

// letter is one dead-letter line from a channel.
type letter struct {
	pos  int64  // the record's input position (0: unknown)
	seq  uint64 // the record's sequence number (0: unknown)
	tag  uint64 // the channel's progress when it handed the line over
	n    uint64 // arrival order, for ties
	line []byte
}

// letterQueue is where the channels hand their dead letters to the merger.
type letterQueue struct {
	mu      sync.Mutex
	in      []letter // handed over, not yet taken by the merger (mu)
	waiting atomic.Int32
	arrived uint64     // mu
	ready   letterHeap // merger only
	errs    *core.ErrorPolicy
}

// add hands over what policy errs (a channel's Deferred) holds, tagged
// with the channel's progress. Channel only; nothing to do if it holds
// nothing.
func (q *letterQueue) add(errs *core.ErrorPolicy, tag uint64) {
	if errs.Held() == 0 {
		return
	}
	lines, pos, seq := errs.TakeDeferredPos()
	q.mu.Lock()
	for i, l := range lines {
		q.arrived++
		q.in = append(q.in, letter{pos: pos[i], seq: seq[i], tag: tag, n: q.arrived, line: l})
	}
	q.mu.Unlock()
	q.waiting.Add(1)
}

// flush writes, in position order, the lines whose tag the merger has
// emitted (done: the last sequence number it emitted; ^0 at the end).
// Merger only.
func (q *letterQueue) flush(done uint64) error {
	if q.waiting.Load() > 0 {
		q.mu.Lock()
		q.waiting.Store(0)
		for _, l := range q.in {
			heap.Push(&q.ready, l)
		}
		clear(q.in)
		q.in = q.in[:0]
		q.mu.Unlock()
	}
	for len(q.ready) > 0 && q.ready[0].tag <= done {
		l := heap.Pop(&q.ready).(letter)
		if err := q.errs.WriteDeferred([][]byte{l.line}); err != nil {
			return err
		}
	}
	return nil
}

// letterHeap orders letters by position, then sequence number, then tag,
// then arrival. Records that share a position (the elements of an exploded
// JSON array, the values of a one-line array: one line) may be split over
// channels, and which channel gets which, its progress (tag) and the
// arrival order depend on the channel count; their sequence numbers do
// not, and keep input order. A line is written only once the merger has
// emitted its tag ≥ its seq, so every channel letter of a lower seq at
// that position has arrived by then. A source worker's letters have no
// sequence number (their records never reached a splitter): a line is one
// worker's, which hands its letters over in input order, so tag and
// arrival keep that order, as the single source stage writes them.
type letterHeap []letter

func (h letterHeap) Len() int { return len(h) }
func (h letterHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.pos != b.pos {
		return a.pos < b.pos
	}
	if a.seq != b.seq {
		return a.seq < b.seq
	}
	if a.tag != b.tag {
		return a.tag < b.tag
	}
	return a.n < b.n
}
func (h letterHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *letterHeap) Push(x any)   { *h = append(*h, x.(letter)) }
func (h *letterHeap) Pop() any {
	old := *h
	l := old[len(old)-1]
	*h = old[:len(old)-1]
	return l
}
