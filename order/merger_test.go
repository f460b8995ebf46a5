package order

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// tb is a test batch: records (seq, tie) or a marker.
type tb struct {
	seqs   []uint64
	ties   []int
	marker bool
	seq    uint64
	ch     int
}

type rec struct {
	seq    uint64
	tie    int
	marker bool
}

func tieOf(a *tb, i int, b *tb, j int) int { return a.ties[i] - b.ties[j] }

// A model of a parallel region: records get sequence numbers, go to random
// channels, are filtered at random; at each marker every channel releases a
// few "window results" stamped with the marker's seq and a global tie order.
// Whatever the batching, progress reports and arrival interleaving, the
// ordered merger must reproduce the global order exactly.
func TestMergerRestoresOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(t, "channels")
		items := rapid.IntRange(0, 300).Draw(t, "items")
		streams := make([][]rec, n)
		var want []rec
		seq := uint64(0)
		tie := 0
		for k := 0; k < items; k++ {
			seq++
			if rapid.IntRange(0, 9).Draw(t, "kind") == 0 { // a marker
				fired := rapid.IntRange(0, 2*n).Draw(t, "fired")
				var rs []rec
				for f := 0; f < fired; f++ {
					tie++
					rs = append(rs, rec{seq: seq, tie: tie})
					c := rapid.IntRange(0, n-1).Draw(t, "firing channel")
					streams[c] = append(streams[c], rec{seq: seq, tie: tie})
				}
				want = append(want, rs...)
				for c := range streams {
					streams[c] = append(streams[c], rec{seq: seq, marker: true})
				}
				want = append(want, rec{seq: seq, marker: true})
				continue
			}
			c := rapid.IntRange(0, n-1).Draw(t, "channel")
			if rapid.IntRange(0, 3).Draw(t, "filtered") == 0 {
				continue
			}
			streams[c] = append(streams[c], rec{seq: seq})
			want = append(want, rec{seq: seq})
		}
		seq++ // end of stream
		for c := range streams {
			streams[c] = append(streams[c], rec{seq: seq, marker: true})
		}
		want = append(want, rec{seq: seq, marker: true})

		// Cut each channel's stream into batches.
		batches := make([][]*tb, n)
		for c, s := range streams {
			for i := 0; i < len(s); {
				if s[i].marker {
					batches[c] = append(batches[c], &tb{marker: true, seq: s[i].seq, ch: c})
					i++
					continue
				}
				j := i
				size := rapid.IntRange(1, 8).Draw(t, "size")
				b := &tb{ch: c}
				for j < len(s) && !s[j].marker && j-i < size {
					b.seqs = append(b.seqs, s[j].seq)
					b.ties = append(b.ties, s[j].tie)
					j++
				}
				batches[c] = append(batches[c], b)
				i = j
			}
		}
		m := New[*tb](n, true, tieOf)
		var got []rec
		drain := func() {
			for {
				st, ok := m.Next()
				if !ok {
					return
				}
				switch st.Kind {
				case Run:
					for i := st.From; i < st.To; i++ {
						got = append(got, rec{seq: st.Batch.seqs[i], tie: st.Batch.ties[i]})
					}
				case Marker:
					if len(st.Markers) != n {
						t.Fatalf("marker with %d copies, want %d", len(st.Markers), n)
					}
					for c, mk := range st.Markers {
						if mk.ch != c || mk.seq != st.Markers[0].seq {
							t.Fatalf("misaligned marker copies %+v", st.Markers)
						}
					}
					got = append(got, rec{seq: st.Markers[0].seq, marker: true})
				}
			}
		}
		next := make([]int, n)
		for {
			var open []int
			for c := range batches {
				if next[c] < len(batches[c]) {
					open = append(open, c)
				}
			}
			if len(open) == 0 {
				break
			}
			c := open[rapid.IntRange(0, len(open)-1).Draw(t, "arrival")]
			b := batches[c][next[c]]
			next[c]++
			if b.marker {
				m.PushMarker(c, b, b.seq)
			} else {
				// Progress: at most "just below the channel's next item".
				var p uint64
				if next[c] < len(batches[c]) && rapid.Bool().Draw(t, "report progress") {
					nb := batches[c][next[c]]
					if nb.marker {
						p = nb.seq - 1
					} else {
						p = nb.seqs[0] - 1
					}
				}
				m.PushData(c, b, b.seqs, p)
			}
			if rapid.Bool().Draw(t, "drain now") {
				drain()
			}
		}
		drain()
		if m.Pending() != 0 {
			t.Fatalf("%d items left in the merger", m.Pending())
		}
		if !slices.Equal(got, want) {
			t.Fatalf("merged order differs\n got %v\nwant %v", got, want)
		}
	})
}

// Unordered mode loses no record, delivers each channel's records in its
// order, and still aligns markers.
func TestMergerUnordered(t *testing.T) {
	m := New[*tb](2, false, nil)
	a1 := &tb{seqs: []uint64{1, 3}, ch: 0}
	b1 := &tb{seqs: []uint64{2}, ch: 1}
	ma := &tb{marker: true, seq: 4, ch: 0}
	mb := &tb{marker: true, seq: 4, ch: 1}
	a2 := &tb{seqs: []uint64{5}, ch: 0}
	m.PushData(0, a1, a1.seqs, 0)
	m.PushMarker(0, ma, 4)
	m.PushData(0, a2, a2.seqs, 0)
	var got []string
	step := func() bool {
		st, ok := m.Next()
		if !ok {
			return false
		}
		if st.Kind == Marker {
			got = append(got, "M")
		} else {
			got = append(got, fmt.Sprint(st.Batch.seqs[st.From:st.To]))
		}
		return true
	}
	for step() {
	}
	if want := []string{"[1 3]"}; !slices.Equal(got, want) {
		t.Fatalf("before channel 1 reached the marker: %v, want %v", got, want)
	}
	m.PushData(1, b1, b1.seqs, 0)
	m.PushMarker(1, mb, 4)
	for step() {
	}
	if want := []string{"[1 3]", "[2]", "M", "[5]"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// An empty channel with no progress holds the merge back; a pulse releases it.
func TestMergerWaitsForProgress(t *testing.T) {
	m := New[*tb](2, true, nil)
	a := &tb{seqs: []uint64{10, 11, 12}}
	m.PushData(0, a, a.seqs, 0)
	if st, ok := m.Next(); ok {
		t.Fatalf("emitted %+v while channel 1 may still send seq < 10", st)
	}
	m.Progress(1, 11)
	st, ok := m.Next()
	if !ok || st.From != 0 || st.To != 2 || st.Done {
		t.Fatalf("after progress 11: %+v %v, want records 0..1", st, ok)
	}
	m.Progress(1, 100)
	st, ok = m.Next()
	if !ok || st.From != 2 || st.To != 3 || !st.Done {
		t.Fatalf("after progress 100: %+v %v, want record 2 and Done", st, ok)
	}
}

// After a reconfiguration marker the merger drops retired inputs and takes
// new ones, which start past the marker.
func TestMergerResize(t *testing.T) {
	m := New[*tb](3, true, nil)
	for c := 0; c < 3; c++ {
		m.PushData(c, &tb{seqs: []uint64{uint64(c + 1)}}, []uint64{uint64(c + 1)}, 0)
		m.PushMarker(c, &tb{marker: true, seq: 10, ch: c}, 10)
	}
	var got []uint64
	for {
		st, ok := m.Next()
		if !ok {
			break
		}
		if st.Kind == Run && st.To > st.From {
			got = append(got, st.Batch.seqs[st.From:st.To]...)
		}
		if st.Kind == Marker {
			got = append(got, 10)
			m.Resize(2, 10) // channel 2 retired
			break
		}
	}
	if want := []uint64{1, 2, 3, 10}; !slices.Equal(got, want) {
		t.Fatalf("before resize: %v, want %v", got, want)
	}
	m.Resize(4, 10) // two new channels
	m.PushData(3, &tb{seqs: []uint64{11}}, []uint64{11}, 0)
	if _, ok := m.Next(); ok {
		t.Fatal("emitted while channels 0-2 may still send seq 11")
	}
	for c := 0; c < 3; c++ {
		m.Progress(c, 12)
	}
	st, ok := m.Next()
	if !ok || st.Channel != 3 || st.Batch.seqs[st.From] != 11 {
		t.Fatalf("after progress: %+v %v", st, ok)
	}
}

// A channel that is always a batch ahead never empties its queue; the
// queue must still not grow with the run (it is compacted).
func TestMergerQueueStaysBounded(t *testing.T) {
	m := New[*tb](2, true, nil)
	push := func(ch int, seq uint64) {
		b := &tb{seqs: []uint64{seq}, ch: ch}
		m.PushData(ch, b, b.seqs, 0)
	}
	push(0, 1)
	push(0, 3)
	var got []uint64
	for r := uint64(0); r < 10_000; r++ {
		push(1, 2*r+2)
		for {
			st, ok := m.Next()
			if !ok {
				break
			}
			if st.Kind == Run && st.To > st.From {
				got = append(got, st.Batch.seqs[st.From:st.To]...)
			}
		}
		push(0, 2*r+5)
		if n := len(m.in[0].q) - m.in[0].head; n < 1 {
			t.Fatalf("round %d: channel 0's queue emptied: the test proves nothing", r)
		}
	}
	if c := cap(m.in[0].q); c > 256 {
		t.Fatalf("channel 0's queue grew to %d items of capacity", c)
	}
	for i, s := range got {
		if s != uint64(i+1) {
			t.Fatalf("record %d has seq %d: out of order", i, s)
		}
	}
	if len(got) != 20_000 {
		t.Fatalf("%d records merged, want 20000", len(got))
	}
}
