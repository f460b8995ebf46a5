package runtime

import (
	"math"
	"sync/atomic"
	"time"

	"streamd/core"
	"streamd/core/plan"
	"streamd/ring"
)

// Adaptive batching at the splitter (docs/ARCHITECTURE.md, "Adaptive
// batching"). Without it the splitter pushes, after every source batch, a
// sub-batch and a watermark marker to each channel: at a low rate (100 µs
// source batches of a few records) a 64-slot ring holds a few ms of input,
// fills whenever its channel is descheduled, and the congestion index
// (the time the splitter blocks on full rings) measures batch granularity
// instead of capacity.
//
// With it, the splitter gathers each channel's sub-batches, and the
// watermark and pulse markers routed between them, into one data batch:
// a marker becomes a core.Mark at the offset of the records before it.
// The gathered batch is handed over
//
//   - when it holds core.BatchSize records or maxMarks marks (full);
//   - when the channel is waiting: the ring is drained at the end of a
//     source iteration (ring.SPSC.Drained), or the channel, finding its
//     ring empty, takes the batch from its slot itself (ringInput.pop) —
//     so a source that blocks for long (stdin) never strands records;
//   - when it is linger old (checked at the end of each source
//     iteration, with an injectable clock), even if the channel is busy;
//   - before any other marker (barrier, reconfiguration, update, End) and
//     before anything the splitter pushes outside routing (the pulses of a
//     drain or a failure): push flushes first;
//   - when a watermark or pulse follows at least splitAt records since the
//     last mark: the records go as they are and the marker starts the next
//     batch, so at full rate (source batches of hundreds of records) a
//     channel never copies a segment out (see ringInput.split).
//
// The channel's input splits a gathered batch back into its segments and
// markers (ringInput.split), so every operator sees the records, watermarks
// and pulses it saw without batching, in the same order; only data batch
// boundaries between two markers may differ (records of consecutive
// source batches with no marker between them arrive as one batch). What a
// channel sees depends on timing only through those boundaries: sequence
// numbers, watermarks (with their sequence numbers) and every marker are
// fixed by the splitter's order, so the output, the dead letters and their
// order are the same with batching on or off, for any channel count.
//
// The source workers of the M×N exchange gather too when Job.BatchLinger
// is set (not by default: see below), one slot beside each of their rings
// (routing.held), so that a channel's ring slots do not shrink to 512/N
// records as the channel count N grows: a ring slot and a wake-up are then
// paid per ~512 records of a channel whatever N. Each source batch's
// watermark candidate still reaches the channel as a marker of its own,
// so the pieces a channel's loop sees (and their per-batch work) do not
// change. Two things differ from the single source stage:
//
//   - A gathered batch never crosses a block's end. A channel reads
//     blocks in block order, block b from the ring of b's worker, and
//     moves to the next block's ring at b's block-end marker. The worker
//     pushes that marker (push: everything gathered goes first), so every
//     record and mark of b reaches the ring before b's end and nothing of
//     b+M (its next block) before it; the slot beside the ring holds only
//     records of the block its worker is reading. The channel takes the
//     slot (ringInput) only when the ring it reads for block b is empty;
//     by its Swap the worker may have ended b and gathered for b+M (or
//     later), but then b's end and all else before the batch taken is in
//     the ring (Queued), and the channel keeps that batch with the ring's
//     input (blockInput.ris) until it has taken them, in a later block
//     it reads from that ring. The channel's view of each block is
//     therefore the one without batching, split back the same way, and
//     the block-order merge (blockInput), barriers inside a block
//     (pushed: a flush before them) and live changes (at a block's
//     start, nothing gathered) are unchanged. Pieces (cut.go) bound a
//     gathered batch as they bound the single source stage's (full).
//   - A worker reads flat out: a batch is not sent because its ring is
//     drained (flat), only when full, linger old, before a pushed marker
//     or at the block's end; a channel that runs out takes it itself. So
//     a channel that keeps up with its workers takes what is there when
//     it runs out, and one that does not gets full batches.
//
// Measured on the flights job (one worker, a 2-vCPU VM) it cost 5 % more
// CPU than pushing every sub-batch at 2 channels and 24 % at 4, flushing
// on drained rings or not, copying segments out or not; the profile puts
// the extra time outside this code, in the Parquet reader's stores into
// batches and the window's reads of them, and a run allocates about three
// times as many batches past the pools (cleared, colder in the cache; why
// is still to find): hence off by default for source workers.

// DefaultBatchLinger is plan.DefaultBatchLinger.
const DefaultBatchLinger = plan.DefaultBatchLinger

// maxMarks bounds the markers one gathered batch carries: a channel that
// receives no records (a keyed region whose keys all live elsewhere) still
// gets watermarks, which must not pile up without bound.
const maxMarks = 256

// splitAt is the segment size from which a following watermark or pulse
// hands the gathered batch over instead of being gathered behind it:
// segments of at least this many records are worth a batch of their own,
// and the channel then copies nothing out (ringInput.split).
const splitAt = core.BatchSize / 4

// unset is a gathered batch's start time before the splitter has read the
// clock for it.
const unset = math.MinInt64

// batchLinger is the linger job asks for: its BatchLinger, or
// DefaultBatchLinger when 0; 0 (off) when negative.
func batchLinger(job *Job) time.Duration {
	switch t := job.BatchLinger; {
	case t < 0:
		return 0
	case t > 0:
		return t
	}
	return DefaultBatchLinger
}

// held is one channel ring's slot for the sub-batch the splitter gathers:
// the splitter stores the batch there between source batches and takes it
// out (Swap) to add to it or send it; the channel takes it (Swap) when it
// finds its ring empty. Whoever's Swap returns the batch owns it. The
// splitter adds only to a batch it took back, so a batch the channel took
// is never touched by the splitter again.
//
// Order: the splitter pushes to the ring only what it took out of the
// slot or what follows it, so every batch in the ring when the channel's
// Swap succeeds was pushed before the stolen batch was stored, and every
// later push is newer. But the channel saw its ring empty before its Swap,
// and in between the splitter may have taken the slot, pushed it, and
// stored a newer batch: so the splitter stamps a batch it stores with the
// ring's push count (Batch.Queued), and the channel takes the ring's
// batches up to that count before the stolen one (ringInput.pop). Padded
// so that two channels' slots never share a cache line.
type held struct {
	slot atomic.Pointer[core.Batch]
	_    [56]byte
}

// gatherOn turns adaptive batching on for every ring the splitter has, with
// linger (> 0) measured on now (ns).
func (s *splitter) gatherOn(linger time.Duration, now func() int64) {
	s.linger, s.now = int64(linger), now
	s.gather = make([]*held, len(s.rings))
	for c := range s.gather {
		s.gather[c] = new(held)
	}
	s.since = unsetTimes(len(s.rings))
}

// unsetTimes is n start times, all unset.
func unsetTimes(n int) []int64 {
	t := make([]int64, n)
	for i := range t {
		t[i] = unset
	}
	return t
}

// input is channel c's side of its ring: the ring and, with batching, the
// slot of what the splitter gathers for it.
func (s *splitter) input(c int) *ringInput {
	in := &ringInput{rg: s.rings[c]}
	if s.gather != nil {
		in.held = s.gather[c]
	}
	return in
}

// open takes channel c's gathered batch back from its slot: nil when none
// is gathered or the channel took it (a new one starts: its start time is
// read at the next settle).
func (s *splitter) open(c int) *core.Batch {
	p := s.gather[c].slot.Swap(nil)
	if p == nil {
		s.since[c] = unset
	}
	return p
}

// keep puts channel c's gathered batch p back in its slot, or sends it if
// it is full.
func (s *splitter) keep(c int, p *core.Batch) error {
	if p.Len >= s.full(c) || len(p.Marks) >= maxMarks {
		return s.send(c, p)
	}
	p.Queued = s.rings[c].Pushed()
	s.gather[c].slot.Store(p)
	return nil
}

// flush sends channel c's gathered batch, if there is one.
func (s *splitter) flush(c int) error {
	if s.gather == nil || s.gather[c].slot.Load() == nil {
		return nil
	}
	if p := s.open(c); p != nil {
		return s.send(c, p)
	}
	return nil
}

// flushAll sends every channel's gathered batch.
func (s *splitter) flushAll() error {
	for c := range s.gather {
		if err := s.flush(c); err != nil {
			return err
		}
	}
	return nil
}

// settle is the end of a source iteration (the source stage calls it
// before it asks its source for more, which may block; a source worker
// after each source batch): each gathered batch whose channel has drained
// its ring (not for a source worker: s.flat), or that is linger old, is
// sent; the others stay for the next iteration or for the channel to take.
// The clock is read at most once, and only when some batch stays.
func (s *splitter) settle() error {
	now := int64(unset)
	for c, g := range s.gather {
		if g.slot.Load() == nil {
			continue
		}
		if s.flat || !s.rings[c].Drained() {
			if now == unset {
				now = s.now()
			}
			if s.since[c] == unset {
				s.since[c] = now
			}
			if now-s.since[c] < s.linger {
				continue
			}
		}
		if err := s.flush(c); err != nil {
			return err
		}
	}
	return nil
}

// full is how many records channel c's gathered batch holds when it is
// full: core.BatchSize, or the piece decided for c when the splitter's
// debloater cuts (cut.go), or s.force, so that gathering does not undo
// the pieces.
func (s *splitter) full(c int) int {
	if s.force > 0 {
		return s.force
	}
	if s.db != nil && c < len(s.db.pieces) {
		if p := int(s.db.pieces[c].Load()); p > 0 {
			return p
		}
	}
	return core.BatchSize
}

// lastAt is where the last segment of gathered batch p starts: the offset
// of its last mark, 0 without marks.
func lastAt(p *core.Batch) int {
	if k := len(p.Marks); k > 0 {
		return p.Marks[k-1].At
	}
	return 0
}

// gatherBatch adds b (data, routed whole to channel c: one channel or
// round-robin) to c's gathered batch; it takes ownership of b. A batch
// arriving when nothing or only markers are gathered is taken as it is
// (the markers moved in front of its records), so full source batches
// are never copied.
func (s *splitter) gatherBatch(c int, b *core.Batch) error {
	s.idle[c] = 0
	p := s.open(c)
	switch {
	case p == nil:
		p = b
		s.piece(c)
	case p.Len == 0:
		b.Marks = append(b.Marks[:0], p.Marks...)
		p.Release()
		p = b
		s.piece(c)
	case p.Len+b.Len > s.full(c):
		if err := s.send(c, p); err != nil {
			b.Release()
			return err
		}
		s.since[c] = unset
		p = b
		s.piece(c)
	default:
		if lastAt(p) == p.Len {
			s.piece(c) // a new segment after a mark
		}
		p.AppendRange(b, 0, b.Len)
		b.Release()
	}
	return s.keep(c, p)
}

// mark adds marker m (a Watermark or Pulse) to channel c's gathered batch
// as a core.Mark after the records gathered so far; it takes ownership of
// m. A segment of splitAt records or more before it is sent first.
func (s *splitter) mark(c int, m *core.Batch) error {
	p := s.open(c)
	if p != nil && p.Len-lastAt(p) >= splitAt {
		if err := s.send(c, p); err != nil {
			m.Release()
			return err
		}
		s.since[c] = unset
		p = nil
	}
	if p == nil {
		p = core.NewBatch(s.in)
		p.Stamp = m.Stamp
	}
	p.Marks = append(p.Marks, core.Mark{At: p.Len, Kind: m.Kind, Watermark: m.Watermark, Seq: m.MarkSeq, Stamp: m.Stamp, Control: m.Control})
	m.Release()
	s.piece(c)
	return s.keep(c, p)
}

// piece counts one batch channel c's loop will see (a marker, a directly
// pushed batch, or a segment of a gathered one): pushed, which a drain
// compares with the channel's count, and the pulse clock.
func (s *splitter) piece(c int) {
	s.idle[c] = 0
	s.pushed[c]++
}

// ringInput is a channel's input from one splitter (the single source
// stage's, or a source worker's: blockInput keeps one per ring): the ring
// and, with adaptive batching, the slot of what the splitter gathers for
// it. pop returns a gathered batch as the segments and markers it stands
// for, one at a time. Only the channel's goroutine calls pop; Cancel and
// Len are safe from anywhere.
type ringInput struct {
	rg   *ring.SPSC[*core.Batch]
	held *held // nil without adaptive batching
	// stolen is a batch taken from the slot that the ring's batches up to
	// its Queued count go before.
	stolen *core.Batch
	// q[i:] are the pieces of the last gathered batch not yet returned.
	q []*core.Batch
	i int
	// beforeTake, when set (tests), runs between finding the ring empty
	// and taking the slot: the window in which the splitter may push and
	// gather more.
	beforeTake func()
}

func (in *ringInput) Cancel()  { in.rg.Cancel() }
func (in *ringInput) Len() int { return in.rg.Len() }

func (in *ringInput) pop(sc *stageCPU) (*core.Batch, error) {
	if b, ok := in.tryPop(); ok {
		return b, nil
	}
	return in.wait(sc)
}

// tryPop is pop without waiting: the next piece, the ring's next batch or
// what the splitter gathered when the ring is empty; false when there is
// nothing yet.
func (in *ringInput) tryPop() (*core.Batch, bool) {
	if in.i < len(in.q) {
		return in.next(), true
	}
	var b *core.Batch
	ok := false
	if s := in.stolen; s != nil && in.rg.Popped() == s.Queued {
		b, ok, in.stolen = s, true, nil // everything pushed before it is taken
	}
	if !ok {
		b, ok = in.rg.TryPop()
	}
	if !ok && in.stolen == nil && in.held != nil && in.held.slot.Load() != nil {
		// The ring is empty: take what the splitter gathered, after what
		// it pushed before it (see held).
		if in.beforeTake != nil {
			in.beforeTake()
		}
		if s := in.held.slot.Swap(nil); s != nil {
			if in.rg.Popped() == s.Queued {
				b, ok = s, true
			} else {
				in.stolen = s // older batches are in the ring
				b, ok = in.rg.TryPop()
			}
		}
	}
	if !ok {
		return nil, false
	}
	return in.unpack(b), true
}

// wait is pop once tryPop found nothing: it waits on the ring (the waiting
// accounted to sc). What the splitter gathers meanwhile reaches the ring,
// and wakes the channel, when the splitter sends it (flush rules above).
func (in *ringInput) wait(sc *stageCPU) (*core.Batch, error) {
	b, err := sc.pop(in.rg)
	if err != nil {
		return nil, err
	}
	return in.unpack(b), nil
}

// unpack returns b, or for a gathered batch with marks its first piece
// (the rest queued: split).
func (in *ringInput) unpack(b *core.Batch) *core.Batch {
	if len(b.Marks) == 0 {
		return b
	}
	in.split(b)
	return in.next()
}

// next returns the next queued piece (there must be one).
func (in *ringInput) next() *core.Batch {
	b := in.q[in.i]
	in.q[in.i] = nil
	in.i++
	return b
}

// split queues gathered batch b as the batches it stands for: for each
// mark in order, the records before it (not yet queued) as a data batch,
// then the marker; then the records after the last mark. The first
// non-empty segment always starts at record 0 (every mark before it is at
// 0): it stays in b, cut to its end, and the later segments are copied
// into batches of their own (at full rate there are none: see splitAt).
// A segment's Stamp is b's, the oldest.
func (in *ringInput) split(b *core.Batch) {
	in.q, in.i = in.q[:0], 0
	n, prev, cut := b.Len, 0, -1
	for k := 0; k <= len(b.Marks); k++ {
		end := n
		if k < len(b.Marks) {
			end = b.Marks[k].At
		}
		if end > prev {
			if prev == 0 {
				cut = end
				in.q = append(in.q, b)
			} else {
				seg := core.NewBatch(b.Schema)
				seg.Stamp = b.Stamp
				seg.AppendRange(b, prev, end)
				in.q = append(in.q, seg)
			}
			prev = end
		}
		if k < len(b.Marks) {
			mk := b.Marks[k]
			m := core.NewMarker(mk.Kind)
			m.Watermark, m.MarkSeq, m.Stamp, m.Control = mk.Watermark, mk.Seq, mk.Stamp, mk.Control
			in.q = append(in.q, m)
		}
	}
	if cut < 0 { // markers only
		b.Release()
		return
	}
	clear(b.Marks)
	b.Marks = b.Marks[:0]
	if cut < n {
		b.Truncate(cut)
	}
}
