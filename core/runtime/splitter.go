package runtime

import (
	"fmt"
	"sync/atomic"

	"streamd/core"
	"streamd/kvstate"
	"streamd/ring"
)

// pulseEvery is how many input batches a channel may go without being sent
// anything before the splitter sends it a pulse, so that the merger never
// waits long on a channel that has nothing to say.
const pulseEvery = 4

// splitter numbers records and markers and routes them to channels: by key
// (xxhash of the key fields → key group → owner in the kvstate.Table) or,
// for a stateless region, whole batches round-robin. It is the last step
// of the source stage and runs on its goroutine.
type splitter struct {
	rings  []*ring.SPSC[*core.Batch]
	keyIdx []int
	keyTyp []core.Type
	table  *kvstate.Table
	// tableNow is table, for readers on other goroutines (Live.Plan).
	tableNow atomic.Pointer[kvstate.Table]
	groups   int
	seq      uint64
	parts    []*core.Batch
	idle     []int
	rr       int
	// blocked counts, per channel, the ns the splitter spent blocked on a
	// full ring: the congestion index's numerator (Gedik et al. 2014, §4.1).
	blocked []atomic.Int64
	// pushed counts, per channel index, the batches pushed to it (all
	// kinds), to compare with ChannelStats.Batches.
	pushed []uint64
	// routed counts the data records the splitter has taken to route
	// (pre-region operators applied), whether pushed yet or not: what
	// arrived at the region. Less the records the channels have processed,
	// it is what waits in the region's rings (run.regionLoad). One atomic
	// add per data batch, read once per adaptation period.
	routed atomic.Uint64
	// lastWM is the last watermark broadcast: a channel added later starts
	// there.
	lastWM int64
	// cpu is the source stage's CPU account (waiting on full rings).
	cpu *stageCPU
	// db, if not nil, sets the rings' effective capacity (debloat.go).
	db *debloater
	// errs, for a source worker, is its deferred error policy: what it
	// holds is handed to letters (the merger's queue) before the splitter
	// pushes anything after it (nil for the single source stage, whose
	// source writes its dead letters itself).
	errs    *core.ErrorPolicy
	letters *letterQueue
	// scatter's scratch: each record's channel, records per channel, and
	// the next free index in each channel's batch.
	owners       []int32
	counts, fill []int
	// Adaptive batching (batching.go); gather is nil when it is off (and
	// always for a source worker). gather[c] is the slot of what is
	// gathered for rings[c]; since[c] when the splitter first found
	// channel c busy with it (clock ns, unset before); linger in ns, on
	// now. in is the schema of the batches it routes (of the last one:
	// a marker gathered before any record is given that schema).
	gather []*held
	// flat is set for a source worker, which reads its blocks flat out:
	// settle does not send a batch because its ring is drained (the
	// channel takes it itself when it runs out: batching.go).
	flat   bool
	since  []int64
	linger int64
	now    func() int64
	in     *core.Schema
	// force, when > 0, is the piece every channel gets whatever is
	// measured (cut.go; a test knob: options.forcePieces).
	force int
}

func newSplitter(rings []*ring.SPSC[*core.Batch], in *core.Schema, r *Region, maxChannels int) (*splitter, error) {
	s := &splitter{rings: rings, parts: make([]*core.Batch, len(rings)), idle: make([]int, len(rings)),
		blocked: make([]atomic.Int64, maxChannels), pushed: make([]uint64, maxChannels), groups: r.Groups, lastWM: core.NoTime, in: in}
	for _, k := range r.Key {
		i, err := in.Lookup(k)
		if err != nil {
			return nil, fmt.Errorf("region key: %w", err)
		}
		s.keyIdx = append(s.keyIdx, i)
		s.keyTyp = append(s.keyTyp, in.Fields[i].Type)
	}
	if len(s.keyIdx) > 0 {
		s.table = kvstate.NewTable(r.Groups, len(rings))
	}
	return s, nil
}

// push sends b to channel c after what is gathered for c, and counts it.
// It takes ownership of b.
func (s *splitter) push(c int, b *core.Batch) error {
	if err := s.flush(c); err != nil {
		b.Release()
		return err
	}
	s.piece(c)
	return s.send(c, b)
}

// put sends marker m (a Watermark or Pulse) to channel c: gathered with
// batching on, pushed otherwise. It takes ownership of m.
func (s *splitter) put(c int, m *core.Batch) error {
	if s.gather != nil {
		return s.mark(c, m)
	}
	return s.push(c, m)
}

// send pushes b onto channel c's ring, adding the time it blocked to the
// congestion index. It takes ownership of b (released on error).
func (s *splitter) send(c int, b *core.Batch) error {
	var ns int64
	var err error
	if s.db != nil {
		ns, err = s.db.push(s.cpu, c, s.rings[c], b)
	} else {
		ns, err = s.cpu.push(s.rings[c], b)
	}
	if ns > 0 {
		s.blocked[c].Add(ns)
	}
	if err != nil {
		b.Release()
		return fmt.Errorf("channel %d stopped: %w", c, err)
	}
	return nil
}

// use makes the splitter route to rings under table from now on (a change
// of the channel count; table nil for a stateless region); gather is the
// rings' batching slots (nil when batching is off). Nothing may be
// gathered (push flushes before the markers of a change).
func (s *splitter) use(rings []*ring.SPSC[*core.Batch], gather []*held, table *kvstate.Table) {
	n := len(rings)
	s.rings, s.table = rings, table
	if s.gather != nil {
		s.gather, s.since = gather, unsetTimes(n)
	}
	s.tableNow.Store(table)
	if s.db != nil {
		s.db.reset()
	}
	if len(s.parts) != n {
		s.parts = make([]*core.Batch, n)
		s.idle = make([]int, n)
	}
	s.rr %= n
}

// route takes ownership of b.
func (s *splitter) route(b *core.Batch) error {
	if s.errs != nil {
		// Dead letters of records before b's (and of b's, reported while
		// it was read): every sequence number they can precede is at most
		// the last b's records or marker will get.
		s.letters.add(s.errs, s.seq+uint64(max(1, b.Len, b.Folded)))
	}
	if b.Kind != core.Data {
		return s.broadcast(b)
	}
	s.routed.Add(uint64(b.Len))
	s.in = b.Schema   // a local step's partials have a schema of their own
	if b.Folded > 0 { // a local step's batch: the plain job's numbers
		for i := 0; i < b.Len; i++ {
			b.Seq[i] += s.seq
		}
		s.seq += uint64(b.Folded)
	} else {
		for i := 0; i < b.Len; i++ {
			s.seq++
			b.Seq[i] = s.seq
		}
	}
	keyed := s.table != nil
	if keyed {
		for i := 0; i < b.Len; i++ {
			b.Hash[i] = core.HashKey(b.Row(i), s.keyIdx, s.keyTyp)
		}
	}
	n := len(s.rings)
	switch {
	case n == 1:
		if err := s.whole(0, b); err != nil {
			return err
		}
	case !keyed:
		c := s.rr
		s.rr = (s.rr + 1) % n
		for d := range s.idle {
			s.idle[d]++
		}
		if err := s.whole(c, b); err != nil {
			return err
		}
	default:
		err := s.scatter(b)
		b.Release()
		if err != nil {
			return err
		}
		for c, p := range s.parts {
			if p == nil {
				s.idle[c]++
				continue
			}
			s.parts[c] = nil
			if s.gather != nil {
				err = s.keep(c, p)
			} else {
				err = s.push(c, p)
			}
			if err != nil {
				return err
			}
		}
	}
	for c, idle := range s.idle {
		if idle >= pulseEvery {
			m := core.NewMarker(core.Pulse)
			m.MarkSeq = s.seq
			if err := s.put(c, m); err != nil {
				return err
			}
		}
	}
	return nil
}

// whole routes data batch b as it is to channel c (one channel, or
// round-robin). It takes ownership of b.
func (s *splitter) whole(c int, b *core.Batch) error {
	if s.gather != nil {
		return s.gatherBatch(c, b)
	}
	return s.push(c, b)
}

// pulseAll sends every channel a pulse at sequence number seq (the
// progress of a source that stops: failure.go), after what is gathered.
func (s *splitter) pulseAll(seq uint64) error {
	for c := range s.rings {
		m := core.NewMarker(core.Pulse)
		m.MarkSeq = seq
		if err := s.push(c, m); err != nil {
			return err
		}
	}
	return nil
}

// scatter copies b's records into per-channel batches (s.parts) by their
// owners, in order: one pass to find owners and counts, one to copy each
// record to its place (no per-record append). b stays the caller's. With
// batching, a channel's records are added to what is gathered for it
// (sent first if they would overflow it); an error is a send's.
func (s *splitter) scatter(b *core.Batch) error {
	if cap(s.owners) < b.Len {
		s.owners = make([]int32, b.Len)
	}
	owners := s.owners[:b.Len]
	if len(s.counts) != len(s.rings) {
		s.counts, s.fill = make([]int, len(s.rings)), make([]int, len(s.rings))
	}
	clear(s.counts)
	for i := range owners {
		c := s.table.Owner(kvstate.KeyGroup(b.Hash[i], s.groups))
		owners[i] = int32(c)
		s.counts[c]++
	}
	for c, k := range s.counts {
		if k == 0 {
			continue
		}
		var p *core.Batch
		if s.gather != nil {
			if p = s.open(c); p != nil && p.Len > 0 && p.Len+k > core.BatchSize {
				if err := s.send(c, p); err != nil {
					return err
				}
				s.since[c] = unset
				p = nil
			}
			if p == nil || lastAt(p) == p.Len {
				s.piece(c) // a new segment
			}
			s.idle[c] = 0
		}
		if p != nil && p.Len == 0 && p.Schema != b.Schema {
			// Markers gathered under another schema (before the first
			// batch of a local step's partials): move them over.
			np := core.NewBatch(b.Schema)
			np.Marks = append(np.Marks[:0], p.Marks...)
			p.Release()
			p = np
		}
		if p == nil {
			p = core.NewBatch(b.Schema)
		}
		if p.Len == 0 {
			p.Stamp = b.Stamp
		}
		s.parts[c], s.fill[c] = p, p.Len
		p.Grow(k)
	}
	w := b.Schema.Width()
	for i, c := range owners {
		p := s.parts[c]
		j := s.fill[c]
		s.fill[c]++
		copy(p.Vals[j*w:(j+1)*w], b.Vals[i*w:(i+1)*w])
		p.Seq[j], p.Hash[j], p.Time[j], p.Pos[j] = b.Seq[i], b.Hash[i], b.Time[i], b.Pos[i]
	}
	return nil
}

// broadcast sends a copy of marker b, with the next sequence number, to
// every channel, and closes the rings after End.
func (s *splitter) broadcast(b *core.Batch) error {
	s.seq++
	if b.Kind == core.Watermark {
		s.lastWM = b.Watermark
	}
	if bi := barrierOf(b); bi != nil {
		bi.table, bi.channels = s.table, len(s.rings)
	}
	light := b.Kind == core.Watermark || b.Kind == core.Pulse // gathered with batching on
	for c := range s.rings {
		m := core.NewMarker(b.Kind)
		m.Watermark, m.Epoch, m.MarkSeq, m.Stamp, m.Control = b.Watermark, b.Epoch, s.seq, b.Stamp, b.Control
		var err error
		if light {
			err = s.put(c, m)
		} else {
			err = s.push(c, m)
		}
		if err != nil {
			b.Release()
			return err
		}
	}
	end := b.Kind == core.End
	b.Release()
	if end {
		for _, r := range s.rings {
			r.Close()
		}
	}
	return nil
}
