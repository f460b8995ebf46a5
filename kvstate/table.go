package kvstate

import (
	"fmt"
	"math/bits"
)

// DefaultGroups is the default number of key groups.
const DefaultGroups = 4096

// KeyGroup returns the key group of a key hash for a power-of-two group
// count. It uses the hash's top bits, so it stays independent of the low
// bits a hash table inside a group may use.
func KeyGroup(hash uint64, groups int) int {
	return int(hash >> (64 - bits.TrailingZeros(uint(groups))))
}

// CheckGroups validates a key-group count: a power of two in [1, 1<<16].
func CheckGroups(groups int) error {
	if groups < 1 || groups > 1<<16 || groups&(groups-1) != 0 {
		return fmt.Errorf("key groups must be a power of two between 1 and 65536, not %d", groups)
	}
	return nil
}

// Table maps each key group to its owning channel. It is immutable: a new
// channel count makes a new Table (see Moves).
type Table struct {
	owner    []uint16
	channels int
}

// NewTable assigns groups key groups to channels channels by jump
// consistent hashing of the key-group index. Panics on bad arguments (the
// caller validates them with CheckGroups).
func NewTable(groups, channels int) *Table {
	if CheckGroups(groups) != nil || channels < 1 || channels > 1<<16 {
		panic(fmt.Sprintf("kvstate: bad table %d groups, %d channels", groups, channels))
	}
	t := &Table{owner: make([]uint16, groups), channels: channels}
	for g := range t.owner {
		t.owner[g] = uint16(jump(mix(uint64(g)), channels))
	}
	return t
}

// Owner returns the channel that owns key group g.
func (t *Table) Owner(g int) int { return int(t.owner[g]) }

// Channels is the channel count the table was built for.
func (t *Table) Channels() int { return t.channels }

// Groups is the number of key groups.
func (t *Table) Groups() int { return len(t.owner) }

// Owned lists the key groups channel c owns, in increasing order.
func (t *Table) Owned(c int) []int {
	var gs []int
	for g, o := range t.owner {
		if int(o) == c {
			gs = append(gs, g)
		}
	}
	return gs
}

// Move is one key group changing owner.
type Move struct {
	Group, From, To int
}

// Moves lists the key groups whose owner differs between two tables over
// the same groups, in increasing group order.
func Moves(from, to *Table) []Move {
	var ms []Move
	for g := range from.owner {
		if a, b := from.owner[g], to.owner[g]; a != b {
			ms = append(ms, Move{Group: g, From: int(a), To: int(b)})
		}
	}
	return ms
}

// jump is Lamping and Veach's jump consistent hash: a bucket in [0, n) such
// that growing n to n+1 moves a key only into the new bucket.
func jump(key uint64, n int) int {
	var b, j int64 = -1, 0
	for j < int64(n) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int(b)
}

// mix is the SplitMix64 finaliser: it spreads consecutive key-group indexes
// over the whole 64-bit space before jump hashing.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
