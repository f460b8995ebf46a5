package order

// Tie orders two records with equal sequence numbers from different
// channels: record i of batch a against record j of batch b; negative if
// a's comes first. nil means "by channel index".
type Tie[B any] func(a B, i int, b B, j int) int

// StepKind says what a Step carries.
type StepKind uint8

const (
	// Run: records From..To-1 of Batch, from Channel, come next.
	Run StepKind = iota + 1
	// Marker: every channel delivered the same marker; Markers holds the
	// copies, one per channel, in channel order.
	Marker
)

// Step is one decision of the merger.
type Step[B any] struct {
	Kind    StepKind
	Channel int
	Batch   B
	From    int
	To      int
	// Done: the merger is finished with Batch; the caller owns it again
	// (for Run: after emitting the range; for Marker: all copies).
	Done    bool
	Markers []B
}

type item[B any] struct {
	b      B
	seqs   []uint64 // data: one per record; nil for a marker
	marker bool
	seq    uint64 // marker's sequence number
	pos    int    // next record to emit
}

type input[B any] struct {
	q        []item[B]
	head     int    // index of the head item in q
	progress uint64 // the channel will never again emit a seq ≤ progress
}

func (in *input[B]) empty() bool { return in.head == len(in.q) }

// Merger interleaves the outputs of N channels in sequence order, or, when
// built unordered, in arrival order with markers still aligned. It is not
// safe for concurrent use.
type Merger[B any] struct {
	in      []input[B]
	tie     Tie[B]
	ordered bool
	markers []B
	rr      int

	// Ordered only. heap is a binary min-heap (by less) of the channels
	// whose queue is not empty and whose head still has records (or is a
	// marker); done lists, oldest first, the channels whose head is a data
	// batch with no records left, to hand back. Every non-empty channel is
	// in exactly one of them.
	heap []int
	done []int
}

// New returns a merger of n channels. tie may be nil.
func New[B any](n int, ordered bool, tie Tie[B]) *Merger[B] {
	return &Merger[B]{in: make([]input[B], n), tie: tie, ordered: ordered, markers: make([]B, n)}
}

// rebuild recomputes heap and done from every channel's head (after heads
// changed wholesale: a marker released, a resize).
func (m *Merger[B]) rebuild() {
	m.heap, m.done = m.heap[:0], m.done[:0]
	if !m.ordered {
		return
	}
	for c := range m.in {
		m.place(c, false)
	}
	for i := len(m.heap)/2 - 1; i >= 0; i-- {
		m.down(i)
	}
}

// place files channel c, not in heap or done, by its head: nowhere if its
// queue is empty, in done if its head has no records left, else in heap
// (sifted up if sift).
func (m *Merger[B]) place(c int, sift bool) {
	in := &m.in[c]
	if in.empty() {
		return
	}
	if it := &in.q[in.head]; !it.marker && it.pos >= len(it.seqs) {
		m.done = append(m.done, c)
		return
	}
	m.heap = append(m.heap, c)
	if sift {
		m.up(len(m.heap) - 1)
	}
}

func (m *Merger[B]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !m.less(m.heap[i], m.heap[p]) {
			return
		}
		m.heap[i], m.heap[p] = m.heap[p], m.heap[i]
		i = p
	}
}

func (m *Merger[B]) down(i int) {
	n := len(m.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && m.less(m.heap[r], m.heap[l]) {
			j = r
		}
		if !m.less(m.heap[j], m.heap[i]) {
			return
		}
		m.heap[i], m.heap[j] = m.heap[j], m.heap[i]
		i = j
	}
}

// popRoot removes the heap's first channel.
func (m *Merger[B]) popRoot() {
	n := len(m.heap) - 1
	m.heap[0] = m.heap[n]
	m.heap = m.heap[:n]
	if n > 0 {
		m.down(0)
	}
}

// Resize changes the number of inputs, right after the marker of a
// reconfiguration was released (Step Marker), when every input is past it:
// inputs n and above are dropped — their channels must have sent nothing
// after the marker, so their queues are empty — and new inputs start with
// progress p (the marker's sequence number: a new channel never emits
// anything ordered before it).
func (m *Merger[B]) Resize(n int, p uint64) {
	for c := n; c < len(m.in); c++ {
		if !m.in[c].empty() {
			panic("order: Resize drops an input that still holds items")
		}
	}
	if n < len(m.in) {
		clear(m.in[n:])
		m.in = m.in[:n]
	}
	for len(m.in) < n {
		m.in = append(m.in, input[B]{progress: p})
	}
	m.markers = make([]B, n)
	m.rr = 0
	m.rebuild()
}

// Channels is the number of inputs.
func (m *Merger[B]) Channels() int { return len(m.in) }

// PushData queues a data batch from channel ch whose records carry seqs
// (in non-decreasing order; the slice must stay valid until the batch is
// Done), and the channel's progress as of this batch (0 = none). Empty
// batches are allowed: they carry only progress and are Done at once
// (returned by the next Step).
func (m *Merger[B]) PushData(ch int, b B, seqs []uint64, progress uint64) {
	in := &m.in[ch]
	was := in.empty()
	in.q = append(in.q, item[B]{b: b, seqs: seqs})
	if progress > in.progress {
		in.progress = progress
	}
	if was && m.ordered {
		m.place(ch, true)
	}
}

// PushMarker queues a marker with sequence number seq from channel ch.
func (m *Merger[B]) PushMarker(ch int, b B, seq uint64) {
	in := &m.in[ch]
	was := in.empty()
	in.q = append(in.q, item[B]{b: b, marker: true, seq: seq})
	if seq > in.progress {
		in.progress = seq
	}
	if was && m.ordered {
		m.place(ch, true)
	}
}

// Progress records that channel ch will never again emit a seq ≤ p (a
// pulse).
func (m *Merger[B]) Progress(ch int, p uint64) {
	if p > m.in[ch].progress {
		m.in[ch].progress = p
	}
}

// Pending reports how many items are queued over all channels.
func (m *Merger[B]) Pending() int {
	n := 0
	for i := range m.in {
		n += len(m.in[i].q) - m.in[i].head
	}
	return n
}

// pop drops the head item. The queue is reset when it empties and
// compacted when its popped front is at least half of it (and 32 items):
// a channel that is always a batch ahead never empties its queue, which
// must not grow with the run (amortised O(1): an item is moved at most
// once per compaction that halves the queue).
func (in *input[B]) pop() {
	var zero item[B]
	in.q[in.head] = zero
	in.head++
	switch {
	case in.head == len(in.q):
		in.q = in.q[:0]
		in.head = 0
	case in.head >= 32 && in.head*2 >= len(in.q):
		n := copy(in.q, in.q[in.head:])
		clear(in.q[n:])
		in.q = in.q[:n]
		in.head = 0
	}
}

// Next returns the next step, or false when nothing can be decided until
// more arrives. The caller carries the step out before calling Next again.
//
// Ordered, the channels with records queued are kept in a binary heap by
// their head (a loser-tree-like k-way merge: Knuth, TAOCP vol. 3, §5.4.1):
// the root's head comes first, and the smaller of its two children is the
// head that comes next among the others. Records of the root's head batch
// go, in one run, while they come before that runner-up and at or below
// the progress of every channel with nothing queued: nothing any other
// channel holds or can still send orders before them. A run costs
// O(log channels) heap steps plus one comparison per record, and the scan
// of the empty channels' progress.
func (m *Merger[B]) Next() (Step[B], bool) {
	if !m.ordered {
		// Batches with no records left to emit are handed back first.
		for c := range m.in {
			in := &m.in[c]
			if !in.empty() {
				it := &in.q[in.head]
				if !it.marker && it.pos >= len(it.seqs) {
					b := it.b
					in.pop()
					return Step[B]{Kind: Run, Channel: c, Batch: b, Done: true}, true
				}
			}
		}
		return m.nextUnordered()
	}
	if len(m.done) > 0 { // batches with no records left go back first
		c := m.done[0]
		m.done = m.done[:copy(m.done, m.done[1:])]
		in := &m.in[c]
		b := in.q[in.head].b
		in.pop()
		m.place(c, true)
		return Step[B]{Kind: Run, Channel: c, Batch: b, Done: true}, true
	}
	if len(m.heap) == 0 {
		return Step[B]{}, false
	}
	best := m.heap[0]
	bi := &m.in[best]
	h := &bi.q[bi.head]
	if h.marker {
		st, ok := m.align(h.seq)
		if ok {
			m.rebuild()
		}
		return st, ok
	}
	second := -1
	if n := len(m.heap); n > 1 {
		second = m.heap[1]
		if n > 2 && m.less(m.heap[2], second) {
			second = m.heap[2]
		}
	}
	emptyBound := ^uint64(0)                 // records at or above it wait for an empty channel
	if len(m.heap)+len(m.done) < len(m.in) { // some channel has nothing queued
		for c := range m.in {
			if in := &m.in[c]; in.empty() && in.progress < emptyBound-1 {
				emptyBound = in.progress + 1
			}
		}
	}
	from := h.pos
	to := from
	for to < len(h.seqs) && h.seqs[to] < emptyBound && m.before(best, h, to, second) {
		to++
	}
	if to == from {
		return Step[B]{}, false
	}
	h.pos = to
	st := Step[B]{Kind: Run, Channel: best, Batch: h.b, From: from, To: to}
	if to == len(h.seqs) {
		st.Done = true
		bi.pop()
		m.popRoot()
		m.place(best, true)
	} else {
		m.down(0) // its head moved on
	}
	return st, true
}

// before: record r of channel c's head item h comes before channel d's
// head (d < 0: no other channel has records queued), in the order less
// uses: by sequence number, records at a marker's sequence number before
// the marker, equal sequence numbers by tie and then channel.
func (m *Merger[B]) before(c int, h *item[B], r int, d int) bool {
	if d < 0 {
		return true
	}
	o := &m.in[d].q[m.in[d].head]
	s := h.seqs[r]
	if o.marker {
		return s <= o.seq
	}
	os := o.seqs[o.pos]
	return s < os || s == os && m.tieCmp(h.b, r, c, o.b, o.pos, d) < 0
}

// less orders the heads of two non-empty channels.
func (m *Merger[B]) less(c, d int) bool {
	a, b := &m.in[c].q[m.in[c].head], &m.in[d].q[m.in[d].head]
	as, bs := a.seq, b.seq
	if !a.marker {
		as = a.seqs[a.pos]
	}
	if !b.marker {
		bs = b.seqs[b.pos]
	}
	if as != bs {
		return as < bs
	}
	switch {
	case a.marker && b.marker:
		return c < d
	case a.marker:
		return false // records at a marker's seq come before it
	case b.marker:
		return true
	}
	return m.tieCmp(a.b, a.pos, c, b.b, b.pos, d) < 0
}

func (m *Merger[B]) tieCmp(a B, i, c int, b B, j, d int) int {
	if m.tie != nil {
		if x := m.tie(a, i, b, j); x != 0 {
			return x
		}
	}
	switch {
	case c < d:
		return -1
	case c > d:
		return 1
	}
	return 0
}

// align releases the marker with sequence number seq if every channel's head
// is that marker.
func (m *Merger[B]) align(seq uint64) (Step[B], bool) {
	for c := range m.in {
		in := &m.in[c]
		if in.empty() {
			return Step[B]{}, false
		}
		h := &in.q[in.head]
		if !h.marker || h.seq != seq {
			return Step[B]{}, false
		}
	}
	for c := range m.in {
		in := &m.in[c]
		m.markers[c] = in.q[in.head].b
		in.pop()
	}
	return Step[B]{Kind: Marker, Markers: m.markers, Done: true}, true
}

// nextUnordered hands out whole batches in arrival order per channel,
// round-robin over channels, holding each channel at its next marker until
// all channels reach it.
func (m *Merger[B]) nextUnordered() (Step[B], bool) {
	n := len(m.in)
	var markerSeq uint64
	atMarker := 0
	for k := 0; k < n; k++ {
		c := (m.rr + k) % n
		in := &m.in[c]
		if in.empty() {
			continue
		}
		h := &in.q[in.head]
		if h.marker {
			atMarker++
			markerSeq = h.seq
			continue
		}
		m.rr = (c + 1) % n
		st := Step[B]{Kind: Run, Channel: c, Batch: h.b, From: h.pos, To: len(h.seqs), Done: true}
		in.pop()
		return st, true
	}
	if atMarker == n {
		return m.align(markerSeq)
	}
	return Step[B]{}, false
}
