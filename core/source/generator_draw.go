package source

import (
	"math"
	"math/bits"
)

// The generator's random draws are counter-based: draw n of a seed is a
// pure function of (seed, n), so record i can be built without the records
// before it (an O(1) skip, blocks read in any order by any number of
// workers).
//
// The function is SplitMix64 (Steele, Lea & Flood, "Fast splittable
// pseudorandom number generators", OOPSLA 2014; the finaliser is Stafford's
// "Mix13", as in java.util.SplittableRandom and Vigna's splitmix64.c): draw
// n is the mixer applied to the Weyl state seed + (n+1)·γ, which is exactly
// output n of the sequential SplitMix64 generator seeded with seed — a
// generator that passes TestU01's BigCrush — evaluated at any n in O(1).
// Record i makes two draws, 2i (its key) and 2i+1 (its value).
//
// Why not Philox2x64-10 (Salmon et al., SC 2011), the textbook
// counter-based generator: its ten dependent 64×64→128 multiplies cost
// about 15 ns a record on the 2-vCPU EPYC VM, against about 4 ns for
// SplitMix64's two independent mixes, in a generator that builds a record
// in 12 to 15 ns. The price of SplitMix64 is that different seeds are
// offsets of one sequence: seeds s and s+d start (d·γ⁻¹ mod 2⁶⁴) draws
// apart, at least 2⁴¹ draws (2⁴⁰ records) for every |d| < 4·10⁶, so nearby
// seeds never share records in practice.

// gamma is SplitMix64's increment, 2⁶⁴/φ rounded to odd.
const gamma = 0x9e3779b97f4a7c15

// mix64 is SplitMix64's finaliser (Stafford's Mix13): a bijection of uint64
// whose output bits each depend on every input bit.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// draw is draw n of seed: SplitMix64's output n (0-based) for that seed,
// uniform over uint64.
func draw(seed, n uint64) uint64 {
	return mix64(seed + (n+1)*gamma)
}

// below maps a uniform draw u to [0, n) by multiply-shift (the high word of
// u·n; Lemire, "Fast random integer generation in an interval", ACM TOMACS
// 2019, without the rejection step): value k has probability ⌊2⁶⁴/n⌋/2⁶⁴
// or ⌈2⁶⁴/n⌉/2⁶⁴, off 1/n by less than 2⁻⁶⁴. The low word is returned as
// well: for a given k it is spread evenly over [0, 2⁶⁴) (in steps of n),
// so it serves as a second uniform draw (the alias table's coin).
func below(u, n uint64) (k, frac uint64) {
	return bits.Mul64(u, n)
}

// aliasTable draws from a fixed discrete distribution over [0, n) in O(1)
// from one uniform draw: Walker's alias method with Vose's construction
// (Vose, "A linear algorithm for generating random numbers with a given
// distribution", IEEE TSE 17(9), 1991). Column k keeps k with probability
// cut[k]/2⁶⁴ and gives alias[k] otherwise; a draw picks a column uniformly
// (below's high word) and flips the coin with below's low word. The
// distribution it draws from is the one it was built for up to float64
// rounding (relative error about 10⁻¹⁵ per key; TestZipfTableExact).
type aliasTable struct {
	cols []aliasColumn
}

type aliasColumn struct {
	cut   uint64 // keep the column if the coin is below cut (scaled to 2⁶⁴)
	alias int    // the key otherwise
}

// newZipfTable is the alias table of the Zipf distribution over keys
// 0 … n-1 with exponent s: P(k) ∝ (k+1)^-s, the distribution of math/rand's
// Zipf with v = 1 and imax = n-1 (the generator's, before 2026-12-01).
func newZipfTable(n int, s float64) *aliasTable {
	w := make([]float64, n)
	sum := 0.0
	for k := n - 1; k >= 0; k-- { // smallest first: a more exact sum
		w[k] = math.Pow(float64(k+1), -s)
		sum += w[k]
	}
	for k := range w {
		w[k] /= sum
	}
	return newAliasTable(w)
}

// newAliasTable builds the table of the distribution p (p sums to 1 up to
// rounding; n = len(p) ≥ 1).
func newAliasTable(p []float64) *aliasTable {
	n := len(p)
	t := &aliasTable{cols: make([]aliasColumn, n)}
	// q[k] = p[k]·n: column k's share of its own key; columns under 1 are
	// topped up from one column over 1 (its alias).
	q := make([]float64, n)
	small, large := make([]int, 0, n), make([]int, 0, n)
	for k, pk := range p {
		q[k] = pk * float64(n)
		if q[k] < 1 {
			small = append(small, k)
		} else {
			large = append(large, k)
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		t.cols[s] = aliasColumn{cut: scaleCut(q[s]), alias: l}
		q[l] = (q[l] + q[s]) - 1
		if q[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	// What is left holds 1 up to rounding: the column keeps its key.
	for _, k := range append(small, large...) {
		t.cols[k] = aliasColumn{cut: math.MaxUint64, alias: k}
	}
	return t
}

// scaleCut is q·2⁶⁴ for q in [0, 1), saturated below 2⁶⁴.
func scaleCut(q float64) uint64 {
	const two64 = 1 << 64
	x := math.Max(q, 0) * two64
	if x >= two64 {
		return math.MaxUint64
	}
	return uint64(x)
}

// key maps a uniform draw to a key.
func (t *aliasTable) key(u uint64) uint64 {
	k, coin := below(u, uint64(len(t.cols)))
	c := &t.cols[k]
	if coin < c.cut {
		return k
	}
	return uint64(c.alias)
}
