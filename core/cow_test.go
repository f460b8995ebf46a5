package core_test

import (
	"encoding/binary"
	"testing"

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
