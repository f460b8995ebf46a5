package core_test

import (
	"encoding/binary"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"

	"streamd/core"
)

// The owner keeps changing groups while the snapshot is written; every
// group must come out with its value at the barrier (run under -race: the
// background never reads a group the owner is changing).
func TestGroupSnapshotCopyOnWrite(t *testing.T) {
	for round := 0; round < 50; round++ {
		const groups = 256
		state := make([][]int64, groups)
		for g := range state {
			state[g] = []int64{int64(g), int64(g * 2)}
		}
		write := func(dst []byte, g int) []byte {
			dst = binary.AppendUvarint(dst, uint64(g))
			for _, v := range state[g] {
				dst = binary.AppendVarint(dst, v)
			}
			return dst
		}
		owned := make([]int, 0, groups)
		for g := 0; g < groups; g += 2 { // every other group is ours
			owned = append(owned, g)
		}
		s := core.NewGroupSnapshot(owned, write)
		for i := 0; i < 4*groups; i++ { // the data path goes on
			g := (i * 7) % groups
			s.Touch(g)
			state[g][0] += 1000
			state[g] = append(state[g][:1], state[g][1]+1)
		}
		data := s.Bytes()
		n, k := binary.Uvarint(data)
		if n != uint64(len(owned)) {
			t.Fatalf("%d groups in the snapshot, want %d", n, len(owned))
		}
		data = data[k:]
		for _, g := range owned {
			gg, k := binary.Uvarint(data)
			data = data[k:]
			a, k := binary.Varint(data)
			data = data[k:]
			b, k := binary.Varint(data)
			data = data[k:]
			if int(gg) != g || a != int64(g) || b != int64(2*g) {
				t.Fatalf("round %d: group %d written as %d: %d %d, want %d %d", round, g, gg, a, b, g, 2*g)
			}
		}
		if len(data) != 0 || !s.Finished() {
			t.Fatalf("%d bytes left, finished %v", len(data), s.Finished())
		}
	}
}

// The owner's Touch of a group the background has not reached serialises
// it on the spot and reports one stall; a group already done reports none;
// the snapshot still holds every group once, in order.
func TestGroupSnapshotStalls(t *testing.T) {
	gate := make(chan struct{})
	write := func(dst []byte, g int) []byte {
		if g == 0 {
			<-gate // the background is held on group 0
		}
		return binary.AppendUvarint(dst, uint64(g))
	}
	s := core.NewGroupSnapshot([]int{0, 1, 2, 3}, write)
	var stalls []time.Duration
	s.ObserveStalls(func(d time.Duration) { stalls = append(stalls, d) })
	s.Touch(2) // pending: the owner writes it
	s.Touch(2) // done: nothing to do
	s.Touch(7) // not in the snapshot
	if len(stalls) != 1 || stalls[0] < 0 {
		t.Fatalf("stalls %v, want one", stalls)
	}
	close(gate)
	parts := s.Parts()
	if len(parts) != 5 {
		t.Fatalf("%d parts, want the count and 4 groups", len(parts))
	}
	for i, want := range []uint64{4, 0, 1, 2, 3} {
		if v, _ := binary.Uvarint(parts[i]); v != want {
			t.Errorf("part %d = %d, want %d", i, v, want)
		}
	}
	if got := len(s.Bytes()); got != 5 {
		t.Errorf("Bytes: %d bytes, want 5", got)
	}
}

// TouchGroups (before key groups go to another owner) writes exactly the
// groups given, at their barrier values, while the background may still
// be on others; a new owner may then change them (run under -race).
func TestGroupSnapshotTouchGroups(t *testing.T) {
	const groups = 512
	state := make([]int64, groups)
	for g := range state {
		state[g] = int64(g)
	}
	release := make(chan struct{})
	write := func(dst []byte, g int) []byte {
		if g == 0 {
			<-release // hold the background on the first group
		}
		return binary.AppendVarint(dst, state[g])
	}
	all := make([]int, groups)
	for g := range all {
		all[g] = g
	}
	s := core.NewGroupSnapshot(all, write)
	moved := []int{5, 100, 511, 700} // 700: not in the snapshot
	s.TouchGroups(moved)
	if s.Finished() {
		t.Fatal("finished with the background held on group 0")
	}
	done := make(chan struct{})
	go func() { // the new owner changes what it adopted
		defer close(done)
		for _, g := range moved[:3] {
			state[g] = -1
		}
	}()
	<-done
	close(release)
	data := s.Bytes()
	_, k := binary.Uvarint(data)
	data = data[k:]
	for g := range groups {
		v, k := binary.Varint(data)
		data = data[k:]
		if v != int64(g) {
			t.Fatalf("group %d written as %d, want its barrier value %d", g, v, g)
		}
	}
}

// A snapshot with GroupBuffers writes each group into the buffer the last
// released snapshot used for it, emptied; a group it has no buffer for,
// or one whose snapshot was not released, gets nil: blocks still in use
// are never written into.
func TestGroupSnapshotBuffersReused(t *testing.T) {
	var bufs core.GroupBuffers
	got := map[int][]byte{} // group → the dst write was given
	var mu sync.Mutex
	write := func(dst []byte, g int) []byte {
		mu.Lock()
		got[g] = dst
		mu.Unlock()
		return append(dst, byte(g), byte(g), byte(g))
	}
	first := core.NewGroupSnapshotBuffers([]int{1, 2, 3}, &bufs, write)
	parts := first.Parts()
	for g, dst := range got {
		if dst != nil {
			t.Fatalf("first snapshot: group %d given a %d-byte buffer, want nil", g, cap(dst))
		}
	}
	first.Release()
	first.Release() // a second call does nothing
	clear(got)

	second := core.NewGroupSnapshotBuffers([]int{2, 3, 4}, &bufs, write)
	second.Parts()
	for _, g := range []int{2, 3} {
		dst := got[g]
		if len(dst) != 0 || cap(dst) == 0 || unsafe.SliceData(dst) != unsafe.SliceData(parts[g]) {
			t.Errorf("second snapshot: group %d given len %d cap %d, want the first's block emptied", g, len(dst), cap(dst))
		}
	}
	if got[4] != nil {
		t.Errorf("second snapshot: group 4 (new) given a buffer")
	}
	want := slices.Clone(second.Bytes())
	clear(got)

	// Not released: the third writes elsewhere, the second stays intact.
	third := core.NewGroupSnapshotBuffers([]int{1, 2, 3, 4}, &bufs, write)
	third.Parts()
	if got[2] != nil || got[3] != nil || got[4] != nil {
		t.Errorf("third snapshot given the unreleased second's buffers")
	}
	if cap(got[1]) == 0 {
		t.Errorf("third snapshot: group 1 (released by the first, unused by the second) not given its buffer")
	}
	if b := second.Bytes(); !slices.Equal(b, want) {
		t.Errorf("the unreleased second snapshot changed: % x, want % x", b, want)
	}
}
