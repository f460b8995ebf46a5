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
// channel count (Resize) or a rebalance (Reassign) makes a new Table, and
// Moves lists what changed. A Table starts from jump consistent hashing
// (NewTable) or from an explicit assignment (NewAssigned: a checkpoint's),
// and after a rebalance it is an explicit assignment that no hash
// reproduces: Owners is what checkpoints record.
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

// NewAssigned makes the table whose key group g is owned by owners[g],
// over channels channels (a checkpoint's Owners). It returns an error
// when the group count is not a valid one (CheckGroups), channels is not
// in [1, 65536], or an owner is outside [0, channels).
func NewAssigned(owners []int, channels int) (*Table, error) {
	if err := CheckGroups(len(owners)); err != nil {
		return nil, err
	}
	if channels < 1 || channels > 1<<16 {
		return nil, fmt.Errorf("a table needs 1 to 65536 channels, not %d", channels)
	}
	t := &Table{owner: make([]uint16, len(owners)), channels: channels}
	for g, o := range owners {
		if o < 0 || o >= channels {
			return nil, fmt.Errorf("key group %d: owner %d is not one of %d channels", g, o, channels)
		}
		t.owner[g] = uint16(o)
	}
	return t, nil
}

// Owners returns a copy of the assignment: element g is key group g's
// channel.
func (t *Table) Owners() []int {
	out := make([]int, len(t.owner))
	for g, o := range t.owner {
		out[g] = int(o)
	}
	return out
}

// Resize returns the table for n channels that moves the fewest key
// groups from t while keeping jump hashing's spread for the groups it
// moves: growing, key group g moves to jump(g, n) exactly when that is one
// of the channels added (≥ t.Channels()); shrinking, the groups of the
// channels removed go to jump(g, n) (< n) and every other group stays.
// For a table built by NewTable(groups, m) the result is NewTable(groups,
// n), so a job that never rebalanced changes its channel count as before;
// a rebalanced table keeps its assignment for every group that does not
// have to move (its balance is kept, except that the groups moving into
// new channels are a spread sample, not a balanced choice). Panics when n
// is not in [1, 65536].
func (t *Table) Resize(n int) *Table {
	if n < 1 || n > 1<<16 {
		panic(fmt.Sprintf("kvstate: resize to %d channels", n))
	}
	next := &Table{owner: make([]uint16, len(t.owner)), channels: n}
	for g, o := range t.owner {
		j := jump(mix(uint64(g)), n)
		switch {
		case n > t.channels && j >= t.channels:
			next.owner[g] = uint16(j)
		case int(o) >= n:
			next.owner[g] = uint16(j)
		default:
			next.owner[g] = o
		}
	}
	return next
}

// Reassign returns a copy of t (same channel count) with every move in
// moves applied: key group m.Group goes to channel m.To. It returns an
// error when a move's From is not the group's owner in t or To is not a
// channel of t.
func (t *Table) Reassign(moves []Move) (*Table, error) {
	next := &Table{owner: append([]uint16(nil), t.owner...), channels: t.channels}
	for _, m := range moves {
		if m.Group < 0 || m.Group >= len(t.owner) || int(t.owner[m.Group]) != m.From || m.To < 0 || m.To >= t.channels {
			return nil, fmt.Errorf("move of key group %d from %d to %d does not fit a table of %d groups over %d channels", m.Group, m.From, m.To, len(t.owner), t.channels)
		}
		next.owner[m.Group] = uint16(m.To)
	}
	return next, nil
}

// Equal says whether t and u assign every key group to the same channel
// over the same channel count.
func (t *Table) Equal(u *Table) bool {
	if t.channels != u.channels || len(t.owner) != len(u.owner) {
		return false
	}
	for g, o := range t.owner {
		if u.owner[g] != o {
			return false
		}
	}
	return true
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
