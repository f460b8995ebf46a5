package source

import (
	"math"
	"math/bits"
	"testing"
)

// splitMix64 is the sequential SplitMix64 generator (Vigna's splitmix64.c):
// the reference draw must agree with at every counter.
type splitMix64 struct{ s uint64 }

func (r *splitMix64) next() uint64 {
	r.s += gamma
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// TestDrawIsSplitMix64: draw(seed, n) is output n of SplitMix64 seeded with
// seed — the published outputs for seed 1234567, and the sequential
// generator's for other seeds, at every counter up to 10⁴.
func TestDrawIsSplitMix64(t *testing.T) {
	for n, want := range []uint64{6457827717110365317, 3203168211198807973, 9817491932198370423, 4593380528125082431, 16408922859458223821} {
		if got := draw(1234567, uint64(n)); got != want {
			t.Errorf("draw(1234567, %d) = %d, want %d", n, got, want)
		}
	}
	for _, seed := range []uint64{0, 1, 42, math.MaxUint64} {
		r := splitMix64{seed}
		for n := range uint64(10_000) {
			if got, want := draw(seed, n), r.next(); got != want {
				t.Fatalf("draw(%d, %d) = %x, SplitMix64 %x", seed, n, got, want)
			}
		}
	}
}

// TestGeneratorRecordsPinned: record i is a pure function of (seed, i),
// fixed since 2026-12-01 (docs/JOB.md): a change here changes every
// generator job's output, and must be said there.
func TestGeneratorRecordsPinned(t *testing.T) {
	for _, c := range []struct {
		opts GeneratorOptions
		i    int64
		key  string
		val  int64
	}{
		// Checked against a Python transcription of SplitMix64 and
		// multiply-shift.
		{GeneratorOptions{Seed: 42}, 0, "k000741", 159},
		{GeneratorOptions{Seed: 42}, 1, "k000278", 344},
		{GeneratorOptions{Seed: 42}, 2, "k000038", 868},
		{GeneratorOptions{Seed: 42}, 1_000_000_007, "k000608", 201},
		{GeneratorOptions{Keys: 100_000, Distribution: "zipf", ZipfS: 1.5}, 0, "k000025", 431},
		{GeneratorOptions{Keys: 100_000, Distribution: "zipf", ZipfS: 1.5}, 1, "k000000", 970},
		{GeneratorOptions{Keys: 100_000, Distribution: "zipf", ZipfS: 1.5}, 1_000_000_007, "k000010", 450},
	} {
		s, err := Generator(c.opts)
		if err != nil {
			t.Fatal(err)
		}
		g := generatorOf(t, s)
		k, v := g.record(c.i)
		if g.keys[k] != c.key || v != c.val {
			t.Errorf("%+v record %d: %s %d, want %s %d", c.opts, c.i, g.keys[k], v, c.key, c.val)
		}
	}
}

// chiSquare is Pearson's statistic of counts against expected counts, with
// the cells expected under 5 pooled into one, and its degrees of freedom.
func chiSquare(counts []int, expected []float64) (x2 float64, df int) {
	var poolN, poolE float64
	cells := 0
	for k, e := range expected {
		if e < 5 {
			poolN += float64(counts[k])
			poolE += e
			continue
		}
		d := float64(counts[k]) - e
		x2 += d * d / e
		cells++
	}
	if poolE > 0 {
		d := poolN - poolE
		x2 += d * d / poolE
		cells++
	}
	return x2, cells - 1
}

// chiSquareBounds is the interval holding a χ² statistic with df degrees
// of freedom but with probability about 2·Φ(-z) (Wilson–Hilferty).
func chiSquareBounds(df int, z float64) (lo, hi float64) {
	d := float64(df)
	q := func(z float64) float64 { return d * math.Pow(1-2/(9*d)+z*math.Sqrt(2/(9*d)), 3) }
	return q(-z), q(z)
}

// checkChiSquare fails t unless counts fit expected: the statistic must lie
// in the interval that holds it with probability 1 - 10⁻⁴ (z = 3.9). The
// draws are fixed by the seed, so the statistic is too: the test cannot
// flake, and a value near either bound would show a change of generator.
func checkChiSquare(t *testing.T, name string, counts []int, expected []float64) {
	t.Helper()
	x2, df := chiSquare(counts, expected)
	lo, hi := chiSquareBounds(df, 3.9)
	t.Logf("%s: χ² = %.1f with %d degrees of freedom (bounds %.1f … %.1f)", name, x2, df, lo, hi)
	if x2 < lo || x2 > hi {
		t.Errorf("%s: χ² = %.1f with %d degrees of freedom, outside %.1f … %.1f", name, x2, df, lo, hi)
	}
}

// TestGeneratorUniformDistribution: over 10⁶ records of seed 1, uniform
// keys, values, a record's key against its value and a value against the
// next record's are uniform and independent by Pearson's χ² test.
func TestGeneratorUniformDistribution(t *testing.T) {
	const n = 1_000_000
	s, err := Generator(GeneratorOptions{Seed: 1, Keys: 1000})
	if err != nil {
		t.Fatal(err)
	}
	g := generatorOf(t, s)
	keys, vals := make([]int, 1000), make([]int, 1000)
	keyVal, valVal := make([]int, 100), make([]int, 100) // 10 × 10 cells
	prev := int64(-1)
	for i := range int64(n) {
		k, v := g.record(i)
		keys[k]++
		vals[v]++
		keyVal[int(k%10)*10+int(v/100)]++
		if prev >= 0 {
			valVal[int(prev/100)*10+int(v/100)]++
		}
		prev = v
	}
	flat := func(cells int, total float64) []float64 {
		e := make([]float64, cells)
		for k := range e {
			e[k] = total / float64(cells)
		}
		return e
	}
	checkChiSquare(t, "keys", keys, flat(1000, n))
	checkChiSquare(t, "values", vals, flat(1000, n))
	checkChiSquare(t, "key mod 10 × value/100", keyVal, flat(100, n))
	checkChiSquare(t, "value/100 × next value/100", valVal, flat(100, n-1))
}

// zipfPMF is P(k) ∝ (k+1)^-s over keys 0 … n-1.
func zipfPMF(n int, s float64) []float64 {
	p := make([]float64, n)
	sum := 0.0
	for k := n - 1; k >= 0; k-- {
		p[k] = math.Pow(float64(k+1), -s)
		sum += p[k]
	}
	for k := range p {
		p[k] /= sum
	}
	return p
}

// TestGeneratorZipfDistribution: over 10⁶ records of seed 1, Zipf keys fit
// P(k) ∝ (k+1)^-s by χ² (rare keys pooled), key 0 is the most frequent, and
// the frequencies of the first hundred keys fall off like rank^-s (the
// least-squares slope of log frequency on log rank is -s within 0.05).
func TestGeneratorZipfDistribution(t *testing.T) {
	const n = 1_000_000
	for _, c := range []struct {
		keys int
		s    float64
	}{{1000, 1.1}, {100_000, 1.5}, {50, 3}} {
		src, err := Generator(GeneratorOptions{Seed: 1, Keys: c.keys, Distribution: "zipf", ZipfS: c.s})
		if err != nil {
			t.Fatal(err)
		}
		g := generatorOf(t, src)
		counts := make([]int, c.keys)
		for i := range int64(n) {
			k, _ := g.record(i)
			counts[k]++
		}
		p := zipfPMF(c.keys, c.s)
		expected := make([]float64, c.keys)
		for k := range p {
			expected[k] = p[k] * n
		}
		checkChiSquare(t, "zipf keys", counts, expected)
		for k := 1; k < c.keys; k++ {
			if counts[k] > counts[0] {
				t.Fatalf("keys %d s %g: key %d drawn %d times, key 0 %d", c.keys, c.s, k, counts[k], counts[0])
			}
		}
		// Fit log(count) = a - slope·log(rank) over ranks with ≥ 100 draws
		// (of the first hundred), so that counting noise stays small.
		var sx, sy, sxx, sxy, m float64
		for k := 0; k < min(100, c.keys) && counts[k] >= 100; k++ {
			x, y := math.Log(float64(k+1)), math.Log(float64(counts[k]))
			sx, sy, sxx, sxy, m = sx+x, sy+y, sxx+x*x, sxy+x*y, m+1
		}
		slope := (m*sxy - sx*sy) / (m*sxx - sx*sx)
		if m < 10 || math.Abs(slope+c.s) > 0.05 {
			t.Errorf("keys %d s %g: frequency ∝ rank^%.3f over %g ranks, want rank^-%g", c.keys, c.s, slope, m, c.s)
		}
	}
}

// TestZipfTableExact: the alias table draws from the Zipf distribution it
// was built for, up to float64 rounding: each key's probability (its
// column's share plus its shares in the columns it is alias of, summed
// exactly in 128 bits) is the target's within 10⁻¹³ relative, or 10⁻¹⁸
// absolute for keys rarer than the coin's resolution (2⁻⁶⁴ a column). Also
// the degenerate sizes 1 and 2, and exponents that leave most keys at 0.
func TestZipfTableExact(t *testing.T) {
	for _, keys := range []int{1, 2, 7, 1000, 100_000} {
		for _, s := range []float64{1.0001, 1.1, 1.5, 3, 10} {
			tab := newZipfTable(keys, s)
			// hi, lo: key k's units of 2⁻⁶⁴ of a column, in 128 bits.
			hi, lo := make([]uint64, keys), make([]uint64, keys)
			add := func(k int, x uint64) {
				var c uint64
				lo[k], c = bits.Add64(lo[k], x, 0)
				hi[k] += c
			}
			for j, c := range tab.cols {
				add(j, c.cut)
				add(c.alias, -c.cut) // 2⁶⁴ - cut
				if c.cut == 0 {
					hi[c.alias]++ // -0 is 2⁶⁴
				}
			}
			want := zipfPMF(keys, s)
			worst := 0.0
			for k := range want {
				got := (float64(hi[k]) + float64(lo[k])/(1<<64)) / float64(keys)
				if d := math.Abs(got - want[k]); d > 1e-13*want[k]+1e-18 {
					t.Fatalf("keys %d s %g: P(key %d) = %.17g, want %.17g", keys, s, k, got, want[k])
				} else if want[k] > 1e-12 {
					worst = max(worst, d/want[k])
				}
			}
			t.Logf("keys %d s %g: worst relative error %.2g", keys, s, worst)
		}
	}
}

// TestAliasTableKeys: a draw picks the column by its high word and keeps
// the column's key when the coin (the low word) is below the cut.
func TestAliasTableKeys(t *testing.T) {
	tab := newAliasTable([]float64{0.5, 0.25, 0.25})
	for _, u := range []uint64{0, 1, math.MaxUint64, 1 << 63, 0x5555555555555555, 0xaaaaaaaaaaaaaaaa} {
		col, coin := below(u, 3)
		want := col
		if coin >= tab.cols[col].cut {
			want = uint64(tab.cols[col].alias)
		}
		if got := tab.key(u); got != want || got > 2 {
			t.Errorf("key(%x) = %d, want %d", u, got, want)
		}
	}
	// Every key can come out, each about as often as it should over a
	// uniform sweep of the draws.
	counts := make([]int, 3)
	const sweep = 1 << 16
	for i := range uint64(sweep) {
		counts[tab.key(i*(math.MaxUint64/sweep))]++
	}
	for k, p := range []float64{0.5, 0.25, 0.25} {
		if d := math.Abs(float64(counts[k])/sweep - p); d > 1e-3 {
			t.Errorf("key %d: %d of %d draws, want %g", k, counts[k], sweep, p)
		}
	}
}
