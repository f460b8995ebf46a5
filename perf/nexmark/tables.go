package nexmark

import (
	"fmt"
	"math"
)

// String and price tables, built once at init from a fixed PRNG so that
// generating an event allocates nothing. Sizes are powers of two (index by
// mask).
const tableSize = 1024

var (
	// Beam's first and last names, US cities and states.
	firstNames = []string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
	lastNames  = []string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}
	cities     = []string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"}
	states     = []string{"AZ", "CA", "ID", "OR", "WA", "WY"}
	// bidChannels are Beam's four named channels; the others are "channel-N".
	bidChannels = []string{"Google", "Facebook", "Baidu", "Apple"}

	names        [tableSize]string
	emails       [tableSize]string
	creditCards  [tableSize]string
	itemNames    [tableSize]string
	channelNames [tableSize]string
	channelURLs  [tableSize]string
	// prices[i] is Beam's nextPrice, round(10^(6u) × 100) cents, at
	// u = i/4096; price interpolates linearly between neighbours.
	prices [4097]int64
)

func init() {
	r := rng{s: 0x6e65786d61726b} // "nexmark"
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + r.intn(26))
		}
		return string(b)
	}
	for i := range tableSize {
		names[i] = firstNames[r.intn(len(firstNames))] + " " + lastNames[r.intn(len(lastNames))]
		emails[i] = word(7) + "@" + word(5) + ".com"
		creditCards[i] = fmt.Sprintf("%04d %04d %04d %04d", r.intn(10000), r.intn(10000), r.intn(10000), r.intn(10000))
		itemNames[i] = word(20)
		if i < len(bidChannels) {
			channelNames[i] = bidChannels[i]
		} else {
			channelNames[i] = fmt.Sprintf("channel-%d", i)
		}
		channelURLs[i] = fmt.Sprintf("https://www.nexmark.com/%s/%s/%s/item.htm?query=1&channel_id=%d", word(5), word(5), word(5), i)
	}
	for i := range prices {
		u := float64(i) / 4096
		prices[i] = int64(math.Round(math.Pow(10, u*6) * 100))
	}
}

// price maps 28 random bits to a price in cents, log-uniform between
// $1 and $1 000 000 as Beam's nextPrice (10^(6u) dollars): the top 12 bits
// pick one of 4096 steps of u, the low 16 interpolate within it, so ties
// are rare without a math.Pow per event.
func price(x uint64) int64 {
	i := (x >> 16) & 4095
	lo, hi := prices[i], prices[i+1]
	return lo + int64((uint64(hi-lo)*(x&0xffff))>>16)
}

// rng is splitmix64 (Steele, Lea, Flood, "Fast splittable pseudorandom
// number generators", OOPSLA 2014): one add and three multiply-xorshifts
// per draw, no allocation.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn returns a value in [0, n), n > 0 (Lemire's multiply-shift; the
// bias for n ≪ 2^32 is negligible for a benchmark generator).
func (r *rng) intn(n int) int {
	return int((r.next() >> 32) * uint64(n) >> 32)
}

// int64n returns a value in [0, n), n > 0.
func (r *rng) int64n(n int64) int64 {
	return int64(r.next() % uint64(n))
}
