package core

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"
)

// HashKey hashes a record's key fields with xxhash (docs/ARCHITECTURE.md,
// "Hot-path rules", 4: hashed once, at the splitter; the hash travels with
// the record).
func HashKey(row []Value, idx []int, types []Type) uint64 {
	if len(idx) == 1 {
		return hashValue(types[0], row[idx[0]])
	}
	var h uint64
	for j, i := range idx {
		h = (h ^ hashValue(types[j], row[i])) * 0x9e3779b97f4a7c15
	}
	return h ^ h>>29
}

func hashValue(t Type, v Value) uint64 {
	if t == String {
		return xxhash.Sum64String(v.s)
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v.n)
	return xxhash.Sum64(b[:])
}
