package source

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"streamd/core"
)

// GeneratorOptions configures a Generator.
type GeneratorOptions struct {
	// Seed seeds the counter-based generator: the same seed gives the same
	// records.
	Seed uint64
	// Count is the number of records; 0 means unbounded (Next returns
	// ctx.Err() when ctx is done, never io.EOF).
	Count int64
	// Rate is the target rate in records/s; 0 means as fast as Next is
	// called.
	Rate float64
	// RateSteps, if set, replaces Rate by a schedule: a load that steps up
	// and down (elastic demonstrations). The first step starts at 0.
	RateSteps []RateStep
	// Keys is the number of distinct keys; 0 means 1000.
	Keys int
	// Distribution of keys: "uniform" (the default) or "zipf" (which
	// builds a table of 16 bytes a key once).
	Distribution string
	// ZipfS is the Zipf exponent, > 1; 0 means 1.1. Key k000000 is the most
	// frequent.
	ZipfS float64
	// Start is the event time of the first record, in ns since the epoch.
	Start int64
	// Step is the event-time increment per record, in ns; 0 means 1 ms.
	Step int64
}

// GeneratorSchema is the schema of generated records: seq is the record's
// 0-based index, key one of Keys fixed-width strings ("k000042"), value a
// pseudo-random integer in [0, 1000), ts Start + seq·Step.
var GeneratorSchema = core.MustSchema(
	core.Field{Name: "seq", Type: core.Int64},
	core.Field{Name: "key", Type: core.String},
	core.Field{Name: "value", Type: core.Int64},
	core.Field{Name: "ts", Type: core.Timestamp},
)

// GeneratorBlockRecords is the number of records in a block of a
// splittable generator (core.Splittable): block b holds records
// [b·GeneratorBlockRecords, (b+1)·GeneratorBlockRecords), the last block
// fewer at Count. A multiple of core.BatchSize, so that blocks cut batches
// where Next does; 16 batches, so that the cost of handing a block to a
// worker is spread over 8 Ki records (0.1 to 0.3 ms of generation,
// BenchmarkGeneratorBlock).
const GeneratorBlockRecords = 16 * core.BatchSize

// Generator returns a synthetic source of GeneratorSchema records. Record
// i is a pure function of (Seed, i): its key and value come from draws 2i
// and 2i+1 of a counter-based generator (SplitMix64 evaluated at a counter,
// see generator_draw.go), uniform keys by multiply-shift, Zipf keys through
// an alias table built once. Keys are built once, so a record allocates
// nothing. (Until 2026-12-01 the records came from a stateful math/rand
// PCG stream, so every generator job's values changed then, once.)
//
// With a Rate, record i is due at t0 + i/Rate (its intended send time),
// t0 being chosen on the first call to Next so that the first record it
// hands over is due then: record 0 on a fresh start; after SkipRecords
// (a restore), the record after the skipped ones, so that the schedule
// goes on from the restored position instead of waiting out the skipped
// records' time. Next hands over every record that is due, up to a full
// batch; it returns a partial batch when the next record is not due within
// core.Linger ns of the batch's first. It sleeps once per batch, until the
// batch is full or core.Linger ns after its first record was due (not
// until each next record), so that a paced generator wakes at most once
// per core.Linger; a sleep that short puts the thread to sleep (nap)
// rather than yield in a loop until due, which used a whole core. A consumer that falls behind gets
// the records it missed in full batches at once (the schedule does not
// slip, so that latency measured against intended send times is honest).
// In rate mode each batch's Stamp is the intended send time of its first
// record (t0 + i/Rate, wall clock ns), not its arrival: the runtime keeps a
// non-zero Stamp, so latency measured at the sink is free of coordinated
// omission. Without a rate the runtime stamps batches on arrival.
//
// Pos is i+1. A generator with a Count implements core.Sized. Every
// generator implements core.Skipper: SkipRecords moves the index, in O(1).
// A generator without a rate (neither Rate nor RateSteps) implements
// core.Splittable, in blocks of GeneratorBlockRecords records cut into
// batches as Next cuts them; a rate-limited one does not, its batches
// following the clock.
func Generator(opts GeneratorOptions) (core.Source, error) {
	if opts.Count < 0 {
		return nil, fmt.Errorf("generator: count %d is negative", opts.Count)
	}
	if err := checkRate(opts.Rate, true); err != nil {
		return nil, fmt.Errorf("generator: %w", err)
	}
	if opts.Keys == 0 {
		opts.Keys = 1000
	}
	if opts.Keys < 0 {
		return nil, fmt.Errorf("generator: keys %d is negative", opts.Keys)
	}
	if opts.Step == 0 {
		opts.Step = int64(time.Millisecond)
	}
	if opts.ZipfS == 0 {
		opts.ZipfS = 1.1
	}
	g := &generator{opts: opts, now: time.Now}
	g.pause = g.sleep
	switch {
	case len(opts.RateSteps) > 0:
		sched, err := newRateSchedule(opts.RateSteps)
		if err != nil {
			return nil, err
		}
		g.sched = sched
	case opts.Rate > 0:
		g.sched, _ = newRateSchedule([]RateStep{{Rate: opts.Rate}})
	}
	switch opts.Distribution {
	case "", "uniform":
	case "zipf":
		if !(opts.ZipfS > 1) {
			return nil, fmt.Errorf("generator: zipf exponent %g must be > 1", opts.ZipfS)
		}
		g.zipf = newZipfTable(opts.Keys, opts.ZipfS)
	default:
		return nil, fmt.Errorf("generator: unknown distribution %q (expected uniform or zipf)", opts.Distribution)
	}
	width := max(6, len(strconv.Itoa(opts.Keys-1)))
	g.keys = make([]string, opts.Keys)
	for k := range g.keys {
		s := strconv.Itoa(k)
		g.keys[k] = "k" + zeros(width-len(s)) + s
	}
	switch {
	case g.sched != nil && opts.Count > 0:
		return sizedGenerator{g}, nil
	case g.sched != nil:
		return g, nil
	case opts.Count > 0:
		return sizedBlockGenerator{blockGenerator{g}}, nil
	}
	return blockGenerator{g}, nil
}

// sizedGenerator is a rate-limited generator with a Count: it implements
// core.Sized.
type sizedGenerator struct{ *generator }

// Size is Count.
func (g sizedGenerator) Size() int64 { return g.opts.Count }

// blockGenerator is a generator without a rate: it implements
// core.Splittable.
type blockGenerator struct{ *generator }

// sizedBlockGenerator is a generator without a rate, with a Count: it
// implements core.Splittable and core.Sized.
type sizedBlockGenerator struct{ blockGenerator }

// Size is Count.
func (g sizedBlockGenerator) Size() int64 { return g.opts.Count }

var (
	_ core.Splittable = blockGenerator{}
	_ core.Splittable = sizedBlockGenerator{}
	_ core.Sized      = sizedBlockGenerator{}
	_ core.Sized      = sizedGenerator{}
	_ core.Skipper    = (*generator)(nil)
	_ core.Lagging    = (*generator)(nil)
)

func zeros(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = '0'
	}
	return string(b)
}

// generator is the state of one sequential reader (Next, SkipRecords): the
// index of its next record and the rate schedule. What records are is
// fixed at construction (opts, zipf, keys) and read-only afterwards, so
// that blocks can be built concurrently.
type generator struct {
	opts  GeneratorOptions
	zipf  *aliasTable // the Zipf keys' table; nil: uniform keys
	keys  []string
	i     int64     // records produced (or skipped)
	t0    time.Time // schedule start (rate mode), set on the first Next after a start or skip
	sched *rateSchedule
	now   func() time.Time // the clock of the schedule: time.Now (tests script it)
	// pause waits d (ns, ≤ 0: not at all) or until ctx is done: g.sleep
	// (tests script it with the clock).
	pause  func(ctx context.Context, d time.Duration) error
	timer  *time.Timer
	closed atomic.Bool // set by Close; read by ReadBlock on other goroutines
}

func (g *generator) Schema() *core.Schema { return GeneratorSchema }

// Next returns the next batch, owned by the caller (see Generator for the
// rate schedule), (nil, io.EOF) after Count records, or ctx.Err() when ctx
// is done (checked per batch, and while sleeping for the schedule).
func (g *generator) Next(ctx context.Context) (*core.Batch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if g.closed.Load() {
		return nil, errClosed
	}
	if g.opts.Count > 0 && g.i >= g.opts.Count {
		return nil, io.EOF
	}
	b := core.NewBatch(GeneratorSchema)
	if g.sched == nil {
		g.append(b, core.BatchSize)
		return b, nil
	}
	if g.t0.IsZero() {
		g.t0 = g.now().Add(-g.sched.at(g.i)) // record i is due now
	}
	var first time.Duration // when b's first record was due
	for !b.Full() && (g.opts.Count == 0 || g.i < g.opts.Count) {
		now := g.now().Sub(g.t0)
		// Records 0 … due-1 are due by now.
		due := g.sched.due(now)
		if due > g.i {
			if b.Len == 0 {
				first = g.sched.at(g.i)
				b.Stamp = g.t0.UnixNano() + int64(first)
			}
			g.append(b, int(min(due-g.i, int64(core.BatchSize-b.Len))))
			continue
		}
		next := g.sched.at(g.i) // when record i is due
		if b.Len == 0 {
			first = next
		} else if next > first+core.Linger {
			break
		}
		// Sleep until the batch is to be handed over (full, or Linger
		// after its first record), not until the next record: one wake
		// per batch.
		last := g.i + int64(core.BatchSize-b.Len) - 1 // the record that fills b
		if c := g.opts.Count; c > 0 {
			last = min(last, c-1)
		}
		if err := g.pause(ctx, min(first+core.Linger, g.sched.at(last))-now); err != nil {
			b.Release()
			return nil, err
		}
	}
	return b, nil
}

// Lag is how many records the rate schedule has made due by now that Next
// has not handed over yet (core.Lagging): the records a consumer that fell
// behind has missed, at most Count less those handed over. It is 0 without
// a rate and before the first Next (the schedule starts there). Call it on
// the goroutine that calls Next; it reads the schedule's clock once.
func (g *generator) Lag() int64 {
	if g.sched == nil || g.t0.IsZero() {
		return 0
	}
	due := g.sched.due(g.now().Sub(g.t0))
	if c := g.opts.Count; c > 0 {
		due = min(due, c)
	}
	return max(0, due-g.i)
}

// append adds the next n records (fewer at Count).
func (g *generator) append(b *core.Batch, n int) {
	if c := g.opts.Count; c > 0 {
		n = int(min(int64(n), c-g.i))
	}
	g.appendRecords(b, g.i, n)
	g.i += int64(n)
}

// appendRecords appends records i … i+n-1 to b. It reads only what is
// fixed at construction: safe on several goroutines at once.
func (g *generator) appendRecords(b *core.Batch, i int64, n int) {
	for j := i; j < i+int64(n); j++ {
		k, v := g.record(j)
		row := b.Append(0, 0, core.NoTime, j+1)
		row[0] = core.IntValue(j)
		row[1] = core.StringValue(g.keys[k])
		row[2] = core.IntValue(v)
		row[3] = core.TimeValue(g.opts.Start + j*g.opts.Step)
	}
}

// record is record i's key (an index into keys) and value: draws 2i and
// 2i+1 of the seed.
func (g *generator) record(i int64) (key uint64, value int64) {
	ku := draw(g.opts.Seed, 2*uint64(i))
	if g.zipf != nil {
		key = g.zipf.key(ku)
	} else {
		key, _ = below(ku, uint64(len(g.keys)))
	}
	v, _ := below(draw(g.opts.Seed, 2*uint64(i)+1), 1000)
	return key, int64(v)
}

// SkipRecords drops the next n records (core.Skipper): it moves the index
// past them, in O(1) (a record is a function of its index, so there is
// nothing to draw), and does not wait for the rate; the schedule restarts
// at the record after them (due at the next Next). It returns how many it
// dropped: fewer than n with io.EOF when Count comes first; 0 and ctx.Err()
// when ctx is done.
func (g *generator) SkipRecords(ctx context.Context, n int64) (int64, error) {
	if g.closed.Load() {
		return 0, errClosed
	}
	if n < 0 {
		return 0, fmt.Errorf("generator: skip %d records: negative", n)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if n > math.MaxInt64-g.i {
		return 0, fmt.Errorf("generator: skip %d records after %d: past the last index", n, g.i)
	}
	g.t0 = time.Time{}
	todo := n
	if c := g.opts.Count; c > 0 {
		todo = min(n, c-g.i)
	}
	g.i += todo
	if todo < n {
		return todo, io.EOF
	}
	return n, nil
}

// Blocks is the number of blocks (core.Splittable): ⌈Count /
// GeneratorBlockRecords⌉, or -1 without a Count.
func (g blockGenerator) Blocks() int {
	if g.opts.Count == 0 {
		return -1
	}
	return int((g.opts.Count + GeneratorBlockRecords - 1) / GeneratorBlockRecords)
}

// BlockStart is the number of records before block b (core.BlockStarts).
func (g blockGenerator) BlockStart(b int) int64 {
	n := int64(b) * GeneratorBlockRecords
	if c := g.opts.Count; c > 0 {
		n = min(n, c)
	}
	return n
}

// ReadBlock emits block b's records (core.Splittable): records
// [b·GeneratorBlockRecords, (b+1)·GeneratorBlockRecords), fewer at Count,
// in full batches of core.BatchSize but the last at Count — the batches
// Next returns on a fresh read. emit owns each batch. ctx is checked per
// batch. Safe on several goroutines at once; it does not move Next's index.
func (g blockGenerator) ReadBlock(ctx context.Context, b int, errs *core.ErrorPolicy, emit func(*core.Batch) error) error {
	if g.closed.Load() {
		return errClosed
	}
	if n := g.Blocks(); b < 0 || (n >= 0 && b >= n) || int64(b) > math.MaxInt64/GeneratorBlockRecords-1 {
		return fmt.Errorf("generator: block %d out of range (%d blocks)", b, n)
	}
	from := int64(b) * GeneratorBlockRecords
	to := from + GeneratorBlockRecords
	if c := g.opts.Count; c > 0 {
		to = min(to, c)
	}
	for i := from; i < to; i += core.BatchSize {
		if err := ctx.Err(); err != nil {
			return err
		}
		batch := core.NewBatch(GeneratorSchema)
		g.appendRecords(batch, i, int(min(core.BatchSize, to-i)))
		if err := emit(batch); err != nil {
			return err
		}
	}
	return nil
}

// sleep waits d or until ctx is done, on a timer reused across calls.
func (g *generator) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	if d < napBelow {
		// A Go timer this short oversleeps to the next millisecond (the
		// runtime's poller waits in whole milliseconds), and yielding in
		// a loop until due burns a core: sleep the thread instead.
		if err := ctx.Err(); err != nil {
			return err
		}
		nap(d)
		return nil
	}
	if g.timer == nil {
		g.timer = time.NewTimer(d)
	} else {
		g.timer.Reset(d)
	}
	select {
	case <-g.timer.C:
		return nil
	case <-ctx.Done():
		g.timer.Stop()
		return ctx.Err()
	}
}

// napBelow is the wait under which a rate-limited generator sleeps its
// thread (nap) rather than on a Go timer.
const napBelow = 200 * time.Microsecond

// Close ends the generator. Safe to call more than once.
func (g *generator) Close() error {
	g.closed.Store(true)
	return nil
}

// RateStep is one step of a generator's rate schedule: from At (since the
// first record) on, Rate records/s.
type RateStep struct {
	At   time.Duration
	Rate float64
}

// rateSchedule is a piecewise-constant rate: record i is due when the
// integral of the rate reaches i.
type rateSchedule struct {
	steps []RateStep
	base  []float64 // records due at steps[k].At
}

func newRateSchedule(steps []RateStep) (*rateSchedule, error) {
	rs := &rateSchedule{steps: steps, base: make([]float64, len(steps))}
	for k, st := range steps {
		if err := checkRate(st.Rate, false); err != nil {
			return nil, fmt.Errorf("generator: rate step %d: %w", k, err)
		}
		if k == 0 {
			if st.At != 0 {
				return nil, fmt.Errorf("generator: the first rate step must start at 0, not %s", st.At)
			}
			continue
		}
		if st.At <= steps[k-1].At {
			return nil, fmt.Errorf("generator: rate steps must be in increasing time order (%s after %s)", st.At, steps[k-1].At)
		}
		rs.base[k] = rs.base[k-1] + (st.At-steps[k-1].At).Seconds()*steps[k-1].Rate
	}
	return rs, nil
}

// MaxRate is the highest generator rate, in records/s: far above what one
// goroutine can generate (~10^8/s), and low enough that the records due
// stay exact in an int64 for years.
const MaxRate = 1e12

// checkRate accepts a finite rate in (0, MaxRate], or 0 when zero (no
// rate: as fast as possible) is allowed.
func checkRate(r float64, zero bool) error {
	switch {
	case math.IsNaN(r) || math.IsInf(r, 0):
		return fmt.Errorf("rate %g records/s is not a finite number", r)
	case r == 0 && zero:
		return nil
	case r <= 0:
		return fmt.Errorf("rate %g records/s must be positive", r)
	case r > MaxRate:
		return fmt.Errorf("rate %g records/s is above the maximum, %g", r, float64(MaxRate))
	}
	return nil
}

// due is the number of records due by elapsed time t (records 0 … due-1),
// at most math.MaxInt64.
func (rs *rateSchedule) due(t time.Duration) int64 {
	k := len(rs.steps) - 1
	for k > 0 && rs.steps[k].At > t {
		k--
	}
	d := rs.base[k] + (t-rs.steps[k].At).Seconds()*rs.steps[k].Rate
	if d >= math.MaxInt64-1 {
		return math.MaxInt64
	}
	return int64(d) + 1
}

// at is when record i is due: the first ns at which due counts it (the
// float division may land a ns early; due is the definition).
func (rs *rateSchedule) at(i int64) time.Duration {
	k := len(rs.steps) - 1
	for k > 0 && rs.base[k] > float64(i) {
		k--
	}
	t := rs.steps[k].At + time.Duration((float64(i)-rs.base[k])/rs.steps[k].Rate*1e9)
	for n := 0; n < 8 && rs.due(t) <= i; n++ {
		t++
	}
	return t
}
