package runtime

import (
	"sync"
	"sync/atomic"

	"streamd/core"
)

// The merger's output batches (docs/ARCHITECTURE.md, "Parallel output").
//
// The merger interleaves the channels' batches in runs (a window firing
// alternates between channels key by key), so its output batches are
// assembled from pieces. Without output workers it copies the runs into
// the batches it hands to the post-region chain (copier). With output
// workers that copy is the bulk of the merger's work (about 60 % of it in
// the flights job), and it need not be serial: the merger hands each
// worker a batch that only lists its runs (gatherer), and the worker copies
// them in (fill) before its post-region operators run. A channel batch is
// then read by the merger and by the workers whose batches list a run of
// it, so it carries a reference count (shared) and goes back to its pool
// with the last of them.

// assembler builds the merger's output batches from runs of channel
// batches, in the merger's order. Merger only.
type assembler interface {
	// add appends records from..to-1 of b (the merger keeps b), handing
	// on every batch it fills.
	add(b *core.Batch, from, to int) error
	// done says the merger is finished with b.
	done(b *core.Batch)
	// flush hands on the batch being built, if it holds anything.
	flush() error
	// drop releases the batch being built (the merger is failing).
	drop()
}

// pusher takes a batch with ownership: the output side (output.Push), or
// a test's collector.
type pusher interface{ Push(*core.Batch) error }

// copier copies the runs into the batches it builds.
type copier struct {
	schema *core.Schema
	next   pusher
	cur    *core.Batch
}

func (c *copier) add(b *core.Batch, from, to int) error {
	for i := from; i < to; {
		if c.cur == nil {
			c.cur = core.NewBatch(c.schema)
		}
		j := min(to, i+core.BatchSize-c.cur.Len)
		c.cur.AppendRange(b, i, j)
		c.cur.Stamp = minStamp(c.cur.Stamp, b.Stamp)
		i = j
		if c.cur.Full() {
			if err := c.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *copier) done(b *core.Batch) { b.Release() }

func (c *copier) flush() error {
	if c.cur == nil || c.cur.Len == 0 {
		return nil
	}
	b := c.cur
	c.cur = nil
	return c.next.Push(b)
}

func (c *copier) drop() { c.cur.Release(); c.cur = nil }

// minStamp is the earlier of two batch stamps (0: none).
func minStamp(a, b int64) int64 {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// shared is a channel batch read by the merger and by output workers: it
// goes back to its pool when the last of them lets go (unref).
type shared struct {
	b    *core.Batch
	refs atomic.Int32
}

var sharedPool = sync.Pool{New: func() any { return new(shared) }}

func (s *shared) unref() {
	if s.refs.Add(-1) == 0 {
		b := s.b
		s.b = nil
		sharedPool.Put(s)
		b.Release() // clears b.Control
	}
}

// segment is a run of a shared batch: records from..to-1.
type segment struct {
	src      *shared
	from, to int
}

// runs is what a gathered batch carries in its Control until an output
// worker fills it: its records, as segments in output order.
type runs struct {
	segs []segment
	n    int
}

var runsPool = sync.Pool{New: func() any { return &runs{segs: make([]segment, 0, 64)} }}

// gatherer builds batches that list their runs instead of holding them.
// A channel batch it has taken a run of carries its *shared in Control
// while the merger holds it.
type gatherer struct {
	schema *core.Schema
	next   pusher
	cur    *core.Batch // a data batch of schema, empty, Control *runs
}

func (g *gatherer) add(b *core.Batch, from, to int) error {
	sh, _ := b.Control.(*shared)
	if sh == nil {
		sh = sharedPool.Get().(*shared)
		sh.b = b
		sh.refs.Store(1) // the merger's, until done
		b.Control = sh
	}
	for i := from; i < to; {
		if g.cur == nil {
			g.cur = core.NewBatch(g.schema)
			g.cur.Control = runsPool.Get().(*runs)
		}
		rs := g.cur.Control.(*runs)
		j := min(to, i+core.BatchSize-rs.n)
		sh.refs.Add(1)
		rs.segs = append(rs.segs, segment{src: sh, from: i, to: j})
		rs.n += j - i
		g.cur.Stamp = minStamp(g.cur.Stamp, b.Stamp)
		i = j
		if rs.n == core.BatchSize {
			if err := g.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (g *gatherer) done(b *core.Batch) {
	if sh, ok := b.Control.(*shared); ok {
		sh.unref()
		return
	}
	b.Release()
}

func (g *gatherer) flush() error {
	if g.cur == nil || g.cur.Control.(*runs).n == 0 {
		return nil
	}
	b := g.cur
	g.cur = nil
	return g.next.Push(b)
}

func (g *gatherer) drop() {
	if g.cur == nil {
		return
	}
	release(g.cur.Control.(*runs))
	g.cur.Control = nil
	g.cur.Release()
	g.cur = nil
}

// release lets go of the segments' batches and recycles rs.
func release(rs *runs) {
	for i := range rs.segs {
		rs.segs[i].src.unref()
		rs.segs[i] = segment{}
	}
	rs.segs, rs.n = rs.segs[:0], 0
	runsPool.Put(rs)
}

// fill copies the runs a gathered batch lists into it (an output worker,
// before its post-region operators); other batches are left alone.
func fill(b *core.Batch) {
	rs, ok := b.Control.(*runs)
	if !ok {
		return
	}
	b.Control = nil
	for _, s := range rs.segs {
		b.AppendRange(s.src.b, s.from, s.to)
	}
	release(rs)
}

// discard releases a batch an output worker will not process, with the
// runs it lists.
func discard(b *core.Batch) {
	if rs, ok := b.Control.(*runs); ok {
		b.Control = nil
		release(rs)
	}
	b.Release()
}

// records is how many records b holds or, for a gathered batch, lists.
func records(b *core.Batch) int {
	if rs, ok := b.Control.(*runs); ok {
		return rs.n
	}
	return b.Len
}

// cut keeps b's first k records (held or listed) and returns a new batch
// with the rest, which the caller owns; 0 < k < records(b).
func cut(b *core.Batch, k int) *core.Batch {
	rest := core.NewBatch(b.Schema)
	rest.Stamp = b.Stamp
	rs, ok := b.Control.(*runs)
	if !ok {
		rest.AppendRange(b, k, b.Len)
		b.Truncate(k)
		return rest
	}
	tail := runsPool.Get().(*runs)
	n := 0
	keep := 0
	for i, s := range rs.segs {
		switch {
		case n >= k: // wholly after the cut: moves with its reference
			tail.segs = append(tail.segs, s)
		case n+s.to-s.from > k: // across the cut: a reference for each side
			at := s.from + k - n
			s.src.refs.Add(1)
			tail.segs = append(tail.segs, segment{src: s.src, from: at, to: s.to})
			rs.segs[i].to = at
			keep = i + 1
		default:
			keep = i + 1
		}
		n += s.to - s.from
	}
	clear(rs.segs[keep:])
	rs.segs = rs.segs[:keep]
	tail.n, rs.n = rs.n-k, k
	rest.Control = tail
	return rest
}
