package order

import (
	"fmt"
	"testing"
)

// BenchmarkMergerKeyed merges the outputs of k channels of a keyed region:
// each source batch of 512 records is split over the channels by key, so
// each channel's batch holds about 512/k records whose sequence numbers
// interleave with the other channels' (runs of ~1 record at k ≥ 8).
// ns/record is the merger's cost per record, one goroutine.
func BenchmarkMergerKeyed(b *testing.B) {
	for _, k := range []int{2, 4, 8, 16} {
		b.Run(fmt.Sprintf("channels=%d", k), func(b *testing.B) {
			benchMerge(b, k, false)
		})
	}
}

// BenchmarkMergerTies merges window output: at each watermark every channel
// emits ~512/k records at the watermark's sequence number, ordered by a tie
// (window end, key) that interleaves the channels.
func BenchmarkMergerTies(b *testing.B) {
	for _, k := range []int{2, 4, 8, 16} {
		b.Run(fmt.Sprintf("channels=%d", k), func(b *testing.B) {
			benchMerge(b, k, true)
		})
	}
}

func benchMerge(b *testing.B, k int, ties bool) {
	const per = 512
	// One source batch's worth, split over the channels, reused each round
	// with sequence numbers shifted.
	type chBatch struct {
		seqs []uint64
		ties []int
	}
	split := make([]chBatch, k)
	x := uint64(88172645463325252)
	for i := range per {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		c := int(x % uint64(k))
		split[c].seqs = append(split[c].seqs, uint64(i+1))
		split[c].ties = append(split[c].ties, i)
	}
	m := New[*tb](k, true, tieOf)
	bs := make([]tb, k)
	n := 0
	b.ReportAllocs()
	b.ResetTimer()
	for round := 0; n < b.N; round++ {
		base := uint64(round) * per
		for c := range k {
			t := &bs[c]
			t.seqs = t.seqs[:0]
			for _, s := range split[c].seqs {
				if ties {
					t.seqs = append(t.seqs, base+per) // every record at the watermark's seq
				} else {
					t.seqs = append(t.seqs, base+s)
				}
			}
			t.ties, t.ch = split[c].ties, c
			m.PushData(c, t, t.seqs, base+per)
		}
		for {
			st, ok := m.Next()
			if !ok {
				break
			}
			n += st.To - st.From
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/record")
}
