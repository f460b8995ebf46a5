package core

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"
)

// GroupSnapshot is a copy-on-write snapshot of an operator's key groups at
// a checkpoint barrier: the data path does not stop to serialise state. A
// background goroutine serialises the groups one by one; the owning
// channel calls Touch(g) before it changes group g, which serialises g
// right there if the background has not yet (or waits the few µs while the
// background finishes g). Either way each group is written exactly as it
// was at the barrier.
//
// Synchronisation: each group's slot goes pending → claimed → done by
// compare-and-swap; only the claimer reads the group's state, and the
// owner changes a group only after it is done, so the background never
// reads state being written. A goroutine that finds a group claimed by
// another blocks on turn until the claimer marks it done (take). It does
// not spin with runtime.Gosched: the owner is a stage goroutine locked to
// its OS thread (the stage's CPU account), and every Gosched of a locked
// goroutine hands its P to another thread and waits to be handed it
// back — two thread switches a turn, where blocking costs two in all.
type GroupSnapshot struct {
	groups []int
	slot   []int32 // group → index in groups, -1 if not in the snapshot
	state  []atomic.Uint32
	blocks [][]byte
	bufs   *GroupBuffers // where blocks come from and go back to (nil: allocated)
	write  func(dst []byte, group int) []byte
	left   atomic.Int64
	done   chan struct{}

	// waiting counts the goroutines blocked (or about to block) on turn
	// for a claimed group; a claimer that marks a group done broadcasts
	// on turn only when it is not 0. Both sides read the other's write by
	// sequentially consistent atomics (waiting, state), so either the
	// waiter sees the group done or the claimer sees the waiter.
	waiting atomic.Int32
	turnMu  sync.Mutex
	turn    sync.Cond

	// stall, if set, is told of each of the owner's waits in Touch
	// (serialising a group itself, or waiting for the background to
	// finish it). Called on the owner's goroutine.
	stall func(time.Duration)
}

const (
	slotPending uint32 = iota
	slotClaimed
	slotDone
)

// NewGroupSnapshot starts a snapshot of groups; write appends one group's
// state in the operator's format. The caller's goroutine owns the groups'
// state and must call Touch before changing any of them.
// write is called with a nil dst (it may allocate its buffer at the size
// it expects).
func NewGroupSnapshot(groups []int, write func(dst []byte, group int) []byte) *GroupSnapshot {
	return NewGroupSnapshotBuffers(groups, nil, write)
}

// NewGroupSnapshotBuffers is NewGroupSnapshot writing each group into the
// buffer bufs holds for it (see GroupBuffers): write is called with that
// buffer, empty, or nil if bufs has none for the group; it may use it or
// allocate another (of the size it expects). Release hands the blocks
// back to bufs. bufs nil: as NewGroupSnapshot.
func NewGroupSnapshotBuffers(groups []int, bufs *GroupBuffers, write func(dst []byte, group int) []byte) *GroupSnapshot {
	s := &GroupSnapshot{groups: groups, state: make([]atomic.Uint32, len(groups)),
		blocks: make([][]byte, len(groups)), bufs: bufs, write: write, done: make(chan struct{})}
	s.turn.L = &s.turnMu
	top := -1
	for _, g := range groups {
		top = max(top, g)
	}
	s.slot = make([]int32, top+1)
	for i := range s.slot {
		s.slot[i] = -1
	}
	for i, g := range groups {
		s.slot[g] = int32(i)
	}
	s.left.Store(int64(len(groups)))
	if len(groups) == 0 {
		close(s.done)
		return s
	}
	go s.background()
	return s
}

func (s *GroupSnapshot) background() {
	for i := range s.groups {
		s.take(i, false)
	}
}

// take serialises slot i if nobody has; it returns once slot i is done
// (blocked on turn while another goroutine writes it).
// owner says the caller is Touch: its time goes to the stall observer.
func (s *GroupSnapshot) take(i int, owner bool) {
	var t0 time.Time
	owner = owner && s.stall != nil
	if owner {
		t0 = time.Now()
	}
	if s.state[i].CompareAndSwap(slotPending, slotClaimed) {
		s.blocks[i] = s.write(s.bufs.take(s.groups[i]), s.groups[i])
		s.state[i].Store(slotDone)
		if s.waiting.Load() > 0 {
			s.turnMu.Lock()
			s.turn.Broadcast()
			s.turnMu.Unlock()
		}
		if s.left.Add(-1) == 0 {
			close(s.done)
		}
		if owner {
			s.stall(time.Since(t0))
		}
		return
	}
	if s.state[i].Load() != slotDone {
		s.waiting.Add(1)
		s.turnMu.Lock()
		for s.state[i].Load() != slotDone {
			s.turn.Wait()
		}
		s.turnMu.Unlock()
		s.waiting.Add(-1)
	}
	if owner {
		s.stall(time.Since(t0))
	}
}

// Touch must be called by the owner before it changes group g's state.
// Once g is done it costs an index and one atomic load.
func (s *GroupSnapshot) Touch(g int) {
	if g < len(s.slot) {
		if i := s.slot[g]; i >= 0 && s.state[i].Load() != slotDone {
			s.take(int(i), true)
		}
	}
}

// Finished reports whether every group has been written.
func (s *GroupSnapshot) Finished() bool { return s.left.Load() == 0 }

// TouchAll finishes every group (before the next snapshot). It is not counted as a stall: the
// background has normally finished long before.
func (s *GroupSnapshot) TouchAll() {
	for i := range s.groups {
		s.take(i, false)
	}
}

// TouchGroups finishes the given groups (those not in the snapshot are
// ignored): before they are handed to another owner, who will change them
// while this snapshot's background may still be writing others. It costs
// only the groups not yet written, not the whole snapshot.
func (s *GroupSnapshot) TouchGroups(groups []int) {
	for _, g := range groups {
		if g < len(s.slot) {
			if i := s.slot[g]; i >= 0 && s.state[i].Load() != slotDone {
				s.take(int(i), false)
			}
		}
	}
}

// Parts waits until every group is written and returns the snapshot in the
// SnapshotGroups format as consecutive parts: the group count, then each
// group's block. The caller may read them (and write them out in order)
// but not change them.
func (s *GroupSnapshot) Parts() [][]byte {
	<-s.done
	parts := make([][]byte, 0, 1+len(s.blocks))
	parts = append(parts, binary.AppendUvarint(nil, uint64(len(s.groups))))
	return append(parts, s.blocks...)
}

// Release says the caller is done with the blocks Parts returned (it has
// written them out): the snapshot drops them, and, where it has
// GroupBuffers, hands each back as its group's buffer for a later
// snapshot to write into. Neither Parts nor Bytes may be called, nor
// their blocks read, afterwards. It waits until every group is written;
// a second call does nothing. A snapshot never released leaves its
// blocks to the garbage collector.
func (s *GroupSnapshot) Release() {
	<-s.done
	if s.bufs != nil {
		s.bufs.put(s.groups, s.blocks)
	}
	clear(s.blocks)
}

// GroupBuffers holds, by key group, the buffer an operator's last
// snapshot serialised each group into, once the snapshot is released, for
// its next snapshot to write into again (NewGroupSnapshotBuffers). An
// operator's state is about as large from one checkpoint to the next, so
// a snapshot in these buffers allocates little: without them every
// snapshot allocated, zeroed and left to the garbage collector buffers the
// size of the whole state. The buffers it holds stay allocated between
// snapshots (they are scalar: the collector does not scan them). The zero
// value is empty and ready; it is safe for concurrent use (a snapshot
// takes buffers on the owner's and the background goroutine, and the
// checkpoint coordinator releases them).
type GroupBuffers struct {
	mu  sync.Mutex
	buf [][]byte // group → its buffer, or nil
}

// take removes group g's buffer and returns it emptied, or nil if there
// is none. A nil GroupBuffers has none.
func (b *GroupBuffers) take(g int) []byte {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	var p []byte
	if g < len(b.buf) {
		p, b.buf[g] = b.buf[g], nil
	}
	b.mu.Unlock()
	return p[:0:cap(p)]
}

// put keeps blocks[i] as groups[i]'s buffer (nil blocks are skipped).
func (b *GroupBuffers) put(groups []int, blocks [][]byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, g := range groups {
		if blocks[i] == nil {
			continue
		}
		if g >= len(b.buf) {
			b.buf = append(b.buf, make([][]byte, g+1-len(b.buf))...)
		}
		b.buf[g] = blocks[i]
	}
}

// Bytes is Parts concatenated into one buffer.
func (s *GroupSnapshot) Bytes() []byte {
	parts := s.Parts()
	n := 0
	for _, b := range parts {
		n += len(b)
	}
	out := make([]byte, 0, n)
	for _, b := range parts {
		out = append(out, b...)
	}
	return out
}

// ObserveStalls makes Touch report each of the owner's copy-on-write
// stalls to fn: the time it spent serialising a group itself, or waiting
// for the background to finish it, before it could change the group.
// These are data-path pauses like the barrier's own. The owner calls it
// before its first Touch; fn runs on the owner's goroutine.
func (s *GroupSnapshot) ObserveStalls(fn func(time.Duration)) { s.stall = fn }

// AsyncSnapshotter is implemented by Snapshotters that take copy-on-write
// snapshots: BeginSnapshot returns at once and the operator calls Touch on
// the returned snapshot before changing a group; a new BeginSnapshot first
// finishes the previous one (TouchAll), so that no background writer of an
// older snapshot reads state the owner changes.
type AsyncSnapshotter interface {
	Snapshotter
	BeginSnapshot(groups []int) *GroupSnapshot
}
