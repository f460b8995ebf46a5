package core

import "math"

// BatchSize is the default number of records a batch holds
// (docs/ARCHITECTURE.md, "Hot-path rules", 5: batches close on size or on
// a short linger).
const BatchSize = 512

// NoTime is the event time of a record that has none, and the watermark
// before any has been seen.
const NoTime = math.MinInt64

// MaxWatermark is the watermark that ends event time: every window fires.
const MaxWatermark = math.MaxInt64

// Kind says what a batch carries: records, or one in-band control marker.
type Kind uint8

const (
	// Data batches carry Len records.
	Data Kind = iota
	// Watermark markers carry event time Watermark (ns): no record with a
	// smaller event time is expected any more.
	Watermark
	// Pulse markers carry no records; they only tell the merger that the
	// channel has processed every record up to Progress.
	Pulse
	// Barrier markers carry checkpoint Epoch.
	Barrier
	// End marks end of stream: nothing follows it on that ring.
	End
	// Reconfig marks the point in the splitter's order where the channel
	// count changes (prepare → sync → update, docs/ARCHITECTURE.md,
	// "Live channel changes").
	Reconfig
	// Update marks the sync point of a change of logic: operators after
	// it run the new logic, records before it saw the old (the runtime's
	// control plane; Control carries the change).
	Update
)

var kindNames = [...]string{"data", "watermark", "pulse", "barrier", "end", "reconfig", "update"}

func (k Kind) String() string { return kindNames[k] }

// Batch is a group of records of one schema, stored row-major, plus the
// per-record metadata the runtime needs, or one control marker.
//
// Record i's fields are Vals[i*w : (i+1)*w] with w = Schema.Width(); Seq[i]
// is its sequence number (set by the splitter), Hash[i] its key hash (set by
// the splitter of a keyed region, xxhash of the key fields), Time[i] its
// event time in ns (NoTime if none) and Pos[i] its position in the input
// (file row or line, 1-based; 0 if unknown) for error messages.
//
// Ownership: a batch has one owner at a time. The owner may read and write
// it, then either hands it on (Emitter.Emit, a ring push: ownership passes
// with it) or calls Release. After either, it must not touch the batch.
type Batch struct {
	Kind   Kind
	Schema *Schema
	Len    int
	Vals   []Value
	Seq    []uint64
	Hash   []uint64
	Time   []int64
	Pos    []int64

	// Watermark is the event time (ns) of a Watermark marker.
	Watermark int64
	// Epoch is the checkpoint epoch of a Barrier marker.
	Epoch uint64
	// MarkSeq is the sequence number a marker holds in the splitter's order.
	MarkSeq uint64
	// Progress, on batches leaving a channel: the channel will never again
	// emit a record with a sequence number ≤ Progress. 0 = no information.
	Progress uint64
	// Channel is the channel a batch left (set by the runtime for the merger).
	Channel int
	// Stamp is when the oldest record in the batch entered the job, in ns
	// since the epoch (wall clock): set by the source stage (or by a source
	// that knows each record's intended send time, for latency without
	// coordinated omission), carried to every batch derived from it.
	Stamp int64

	// Control is the runtime's payload of a Reconfig or Barrier marker
	// (its reconfiguration or checkpoint), opaque to operators: they pass
	// markers on untouched. On data batches it is nil whenever an operator
	// holds the batch; the runtime uses it only on batches between its own
	// stages (the merger's shared channel batches and the runs it hands to
	// output workers). Release clears it.
	Control any

	// Folded, on a data batch from a region's local step
	// (OperatorDef.Local) to the splitter, is the number of input records
	// the batch stands for, and Seq[i] is then the 1-based place among
	// them of the record that record i stands for (a partial: its first):
	// the splitter numbers the batch as if it held the Folded records, so
	// that every sequence number after it is the plain job's. 0 otherwise.
	Folded int

	// Marks, on a data batch between the splitter and a channel (adaptive
	// batching: a sub-batch gathered over several source batches), are
	// the markers that belong between its records, in order: Marks[k]
	// comes after the records before Marks[k].At and before the others.
	// The channel's input splits such a batch back into those records and
	// markers before any operator sees it, so Marks is empty whenever an
	// operator holds a batch. Release empties it (keeping its storage).
	Marks []Mark
	// Queued, on a gathered batch a channel takes from the splitter's slot
	// instead of its ring, is how many batches the splitter had pushed to
	// that ring before it: the channel takes those first. Runtime only.
	Queued uint64

	pooled bool
}

// Mark is a marker carried inside a data batch (Batch.Marks): a
// Watermark or Pulse marker's fields, and At, the number of the batch's
// records that come before it.
type Mark struct {
	At        int
	Kind      Kind
	Watermark int64
	Seq       uint64 // the marker's MarkSeq
	Stamp     int64
	Control   any
}

// NewBatch takes a data batch with room for BatchSize records from the
// schema's pool. The caller owns it. Amortised, it does not allocate.
func NewBatch(s *Schema) *Batch {
	if b, ok := s.pool.Get().(*Batch); ok {
		return b
	}
	w := s.Width()
	return &Batch{
		Schema: s,
		Vals:   make([]Value, 0, BatchSize*w),
		Seq:    make([]uint64, 0, BatchSize),
		Hash:   make([]uint64, 0, BatchSize),
		Time:   make([]int64, 0, BatchSize),
		Pos:    make([]int64, 0, BatchSize),
		pooled: true,
	}
}

// markerSchema is the schema of marker batches: markers cross every edge,
// whatever its schema, and carry no fields.
var markerSchema = MustSchema()

// NewMarker takes a marker batch of kind k (not Data) from the marker pool.
// The caller owns it.
func NewMarker(k Kind) *Batch {
	b := NewBatch(markerSchema)
	b.Kind = k
	return b
}

// Release returns the batch to its schema's pool. The caller gives up
// ownership. Release of a nil batch is a no-op.
func (b *Batch) Release() {
	if b == nil || !b.pooled {
		return
	}
	b.Reset()
	b.Schema.pool.Put(b)
}

// Reset empties the batch and makes it a Data batch again, keeping its
// storage.
func (b *Batch) Reset() {
	clear(b.Vals) // drop string references so the GC can free them
	b.Kind = Data
	b.Len = 0
	b.Vals = b.Vals[:0]
	b.Seq = b.Seq[:0]
	b.Hash = b.Hash[:0]
	b.Time = b.Time[:0]
	b.Pos = b.Pos[:0]
	b.Watermark = 0
	b.Epoch = 0
	b.MarkSeq = 0
	b.Progress = 0
	b.Channel = 0
	b.Stamp = 0
	b.Control = nil
	b.Folded = 0
	b.Queued = 0
	if len(b.Marks) > 0 {
		clear(b.Marks)
		b.Marks = b.Marks[:0]
	}
}

// Full reports whether the batch holds BatchSize records.
func (b *Batch) Full() bool { return b.Len >= BatchSize }

// Row returns record i's fields. The slice aliases the batch.
func (b *Batch) Row(i int) []Value {
	w := b.Schema.Width()
	return b.Vals[i*w : (i+1)*w : (i+1)*w]
}

// Append adds a record with the given metadata and returns its fields, all
// zero, to be filled by the caller. The slice aliases the batch.
func (b *Batch) Append(seq, hash uint64, t, pos int64) []Value {
	w := b.Schema.Width()
	n := len(b.Vals)
	if cap(b.Vals)-n < w {
		b.Vals = append(b.Vals, make([]Value, w)...)
	} else {
		b.Vals = b.Vals[:n+w]
	}
	b.Seq = append(b.Seq, seq)
	b.Hash = append(b.Hash, hash)
	b.Time = append(b.Time, t)
	b.Pos = append(b.Pos, pos)
	b.Len++
	return b.Vals[n : n+w : n+w]
}

// Extend adds k records, all fields zero, with no sequence number or hash,
// no event time (NoTime) and positions pos, pos+1, …, pos+k−1, for a
// caller that fills them column by column (a Parquet reader). One growth
// check per slice, not one per record.
func (b *Batch) Extend(k int, pos int64) {
	w := b.Schema.Width()
	n := len(b.Vals)
	if cap(b.Vals)-n < k*w {
		b.Vals = append(b.Vals, make([]Value, k*w)...)
	} else {
		b.Vals = b.Vals[:n+k*w]
	}
	m := b.Len
	b.Seq = extend(b.Seq, k)
	b.Hash = extend(b.Hash, k)
	b.Time = extend(b.Time, k)
	b.Pos = extend(b.Pos, k)
	for i := range k {
		b.Time[m+i] = NoTime
		b.Pos[m+i] = pos + int64(i)
	}
	b.Len += k
}

// Grow adds k records whose fields and metadata are left as they are: the
// caller must set every one of them (Vals, Seq, Hash, Time, Pos) before
// anyone reads the batch. For a caller that writes records by index (the
// splitter scattering a batch over channels).
func (b *Batch) Grow(k int) {
	w := b.Schema.Width()
	if n := len(b.Vals); cap(b.Vals)-n < k*w {
		b.Vals = append(b.Vals, make([]Value, k*w)...)
	} else {
		b.Vals = b.Vals[:n+k*w]
	}
	b.Seq = grow(b.Seq, k)
	b.Hash = grow(b.Hash, k)
	b.Time = grow(b.Time, k)
	b.Pos = grow(b.Pos, k)
	b.Len += k
}

func grow[T uint64 | int64](s []T, k int) []T {
	if n := len(s); cap(s)-n >= k {
		return s[:n+k]
	}
	return append(s, make([]T, k)...)
}

// extend lengthens s by k zeroed elements.
func extend[T uint64 | int64](s []T, k int) []T {
	n := len(s)
	if cap(s)-n < k {
		return append(s, make([]T, k)...)
	}
	s = s[:n+k]
	clear(s[n:])
	return s
}

// AppendFrom copies record i of src (same width) with its metadata.
func (b *Batch) AppendFrom(src *Batch, i int) {
	row := b.Append(src.Seq[i], src.Hash[i], src.Time[i], src.Pos[i])
	copy(row, src.Row(i))
}

// AppendRange copies records from..to-1 of src (same width), with their
// metadata, in one copy per slice.
func (b *Batch) AppendRange(src *Batch, from, to int) {
	w := b.Schema.Width()
	b.Vals = append(b.Vals, src.Vals[from*w:to*w]...)
	b.Seq = append(b.Seq, src.Seq[from:to]...)
	b.Hash = append(b.Hash, src.Hash[from:to]...)
	b.Time = append(b.Time, src.Time[from:to]...)
	b.Pos = append(b.Pos, src.Pos[from:to]...)
	b.Len += to - from
}

// Truncate keeps the first n records.
func (b *Batch) Truncate(n int) {
	w := b.Schema.Width()
	clear(b.Vals[n*w:])
	b.Vals = b.Vals[:n*w]
	b.Seq = b.Seq[:n]
	b.Hash = b.Hash[:n]
	b.Time = b.Time[:n]
	b.Pos = b.Pos[:n]
	b.Len = n
}

// Move copies record i over record j (j ≤ i), metadata included: the step of
// an in-place filter.
func (b *Batch) Move(j, i int) {
	if i == j {
		return
	}
	w := b.Schema.Width()
	copy(b.Vals[j*w:(j+1)*w], b.Vals[i*w:(i+1)*w])
	b.Seq[j], b.Hash[j], b.Time[j], b.Pos[j] = b.Seq[i], b.Hash[i], b.Time[i], b.Pos[i]
}

// LastSeq is the sequence number that marks how far this batch reaches: the
// last record's for data, MarkSeq for markers.
func (b *Batch) LastSeq() uint64 {
	if b.Kind == Data {
		if b.Len == 0 {
			return 0
		}
		return b.Seq[b.Len-1]
	}
	return b.MarkSeq
}
