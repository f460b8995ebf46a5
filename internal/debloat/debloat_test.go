package debloat

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

const ms = int64(time.Millisecond)

// The limit for given consumer rates: a scripted producer that is blocked
// all the time (sustained backpressure) observes a consumer taking rate
// slots per second; the limit settles at rate × Target within [Min, Max].
func TestLimitFollowsRate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rate   int64 // slots per second the consumer takes
		target time.Duration
		want   int
	}{
		{"slow consumer: the minimum", 2, 500 * time.Millisecond, 4},
		{"10/s, 1 s target", 10, time.Second, 10},
		{"40/s, 250 ms target", 40, 250 * time.Millisecond, 10},
		{"33/s, 100 ms target rounds up", 33, 100 * time.Millisecond, 4},
		{"100/s, 200 ms target", 100, 200 * time.Millisecond, 20},
		{"fast consumer: the ring size", 10_000, time.Second, 64},
	} {
		c := &Controller{Target: int64(tc.target), Min: 4, Max: 64}
		now, popped := int64(0), uint64(0)
		got := 0
		// Pushes that each waited 10 ms, the consumer taking rate/s.
		for range 500 {
			now += 10 * ms
			popped = uint64(now * tc.rate / int64(time.Second))
			got = c.Observe(now, popped, 10*ms)
		}
		if got != tc.want {
			t.Errorf("%s: limit %d, want %d", tc.name, got, tc.want)
		}
	}
}

// Without backpressure (the producer rarely waits) the limit doubles
// window by window back to Max; a window too short decides nothing.
func TestLimitRelaxes(t *testing.T) {
	c := &Controller{Target: int64(time.Second), Min: 4, Max: 64}
	now, popped := int64(0), uint64(0)
	for range 300 { // 3 s blocked, consumer at 5/s: limit 5
		now += 10 * ms
		popped = uint64(now * 5 / int64(time.Second))
		c.Observe(now, popped, 10*ms)
	}
	if c.Limit() != 5 {
		t.Fatalf("limit %d under backpressure at 5/s, want 5", c.Limit())
	}
	// Now pushes wait 1 ms a second: no backpressure.
	var got []int
	for range 4 {
		now += int64(time.Second)
		popped += 1000
		got = append(got, c.Observe(now, popped, ms))
	}
	want := []int{10, 20, 40, 64}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("limits without backpressure %v, want %v", got, want)
		}
	}
	// Half a window: no decision.
	if l := c.Observe(now+int64(time.Second)/2, popped+1, 100*ms); l != 64 {
		t.Fatalf("limit %d after half a window, want 64", l)
	}
}

// The window is at least Window ns: a burst of observations inside one
// window decides nothing, the first past it decides from the whole window.
func TestWindow(t *testing.T) {
	c := &Controller{Target: int64(time.Second), Min: 2, Max: 128, Window: 2 * int64(time.Second)}
	if l := c.Observe(100*ms, 0, 100*ms); l != 128 {
		t.Fatalf("first observation: limit %d, want Max", l)
	}
	if l := c.Observe(1900*ms, 30, 1800*ms); l != 128 {
		t.Fatalf("inside the window: limit %d, want Max", l)
	}
	// Window [0, 2 s]: 60 taken, blocked all along: 30/s × 1 s.
	if l := c.Observe(2000*ms, 60, 100*ms); l != 30 {
		t.Fatalf("after the window: limit %d, want 30", l)
	}
}

// Seed sets the limit until the next decision, within [Min, Max]; the
// decision after it is made from the window as before.
func TestSeed(t *testing.T) {
	c := &Controller{Target: int64(time.Second), Min: 4, Max: 64}
	if l := c.Seed(10); l != 10 || c.Limit() != 10 {
		t.Fatalf("seeded 10: %d, limit %d", l, c.Limit())
	}
	if l := c.Seed(1); l != 4 {
		t.Fatalf("seeded 1: %d, want Min 4", l)
	}
	if l := c.Seed(100); l != 64 {
		t.Fatalf("seeded 100: %d, want Max 64", l)
	}
	c.Seed(10)
	// Inside the first window: the seed holds.
	if l := c.Observe(100*ms, 1, 100*ms); l != 10 {
		t.Fatalf("limit %d inside the first window, want the seed 10", l)
	}
	// A window of backpressure at 5 slots/s decides 5.
	if l := c.Observe(1100*ms, 6, 1000*ms); l != 5 {
		t.Fatalf("limit %d after a window at 5/s, want 5", l)
	}
}

// Slow start: seeded at the floor before the first push, the limit
// doubles window by window to Max when the producer rarely waits, and
// follows the consumer's rate at once when it is blocked (backpressure
// from the start).
func TestSlowStart(t *testing.T) {
	c := &Controller{Target: int64(time.Second), Min: 4, Max: 64}
	if l := c.Seed(4); l != 4 {
		t.Fatalf("seeded 4: %d", l)
	}
	now, popped := int64(0), uint64(0)
	var got []int
	for range 5 { // a push a second that waited 1 ms: no backpressure
		now += int64(time.Second)
		popped += 1000
		got = append(got, c.Observe(now, popped, ms))
	}
	if want := []int{4, 8, 16, 32, 64}; !slices.Equal(got, want) {
		t.Fatalf("slow start without backpressure: %v, want %v", got, want)
	}

	c = &Controller{Target: int64(time.Second), Min: 4, Max: 64}
	c.Seed(4)
	now, popped = 0, 0
	for range 300 { // blocked all along, the consumer at 6 slots/s
		now += 10 * ms
		popped = uint64(now * 6 / int64(time.Second))
		c.Observe(now, popped, 10*ms)
	}
	if l := c.Limit(); l != 6 {
		t.Fatalf("slow start under backpressure at 6/s: limit %d, want 6", l)
	}
}

// A consumer that waited for input for 1/8 of a window or more kept up:
// the producer's wait on this ring (the consumer reading another) is no
// backpressure, and the limit doubles instead of falling to what the
// consumer took from this ring (nothing).
func TestStarvedConsumer(t *testing.T) {
	c := &Controller{Target: int64(time.Second), Min: 4, Max: 64}
	c.Seed(4)
	now, starved := int64(0), int64(0)
	var got []int
	for range 4 { // a push waiting 1 s on a ring the consumer does not read
		now += int64(time.Second)
		starved += 500 * ms
		got = append(got, c.ObserveStarved(now, 0, int64(time.Second), starved))
	}
	if want := []int{4, 8, 16, 32}; !slices.Equal(got, want) {
		t.Fatalf("starved consumer: %v, want %v", got, want)
	}
	// The same waits with a consumer that never waited: backpressure,
	// nothing taken from this ring: the floor.
	if l := c.ObserveStarved(now+int64(time.Second), 0, int64(time.Second), starved); l != 4 {
		t.Fatalf("busy consumer, nothing taken: limit %d, want 4", l)
	}
}

// consume runs c against a consumer that takes a ns per data slot and b
// ns per record, always behind (the producer blocked at every push),
// for n slots: each slot holds c's piece, or whole (records) without
// one. It returns the pieces decided after each slot.
func consume(c *Controller, a, b float64, whole, n int, now *int64, popped, recs *uint64, jitter *rand.Rand) []int {
	var got []int
	for range n {
		size := whole
		if p := c.Piece(); p > 0 && p < whole {
			size = p
		}
		d := int64(a + b*float64(size))
		if jitter != nil { // each slot 0.5 to 1.5 times its cost
			d = int64(float64(d) * (0.5 + jitter.Float64()))
		}
		*now += d
		*popped++
		*recs += uint64(size)
		c.ObserveRecords(*now, *popped, *popped, *recs, d, 0)
		got = append(got, c.Piece())
	}
	return got
}

// The bound in records, against consumers with a known cost per slot (a)
// and per record (b), batches of 256 records: a consumer slow per record
// gets pieces that make Min slots take about Target; one whose cost is
// per slot is cut at most for a window now and then (the probe); one with
// both gets pieces whose fixed cost is at most a quarter of their
// records'; a fast one is never cut; and without backpressure the piece
// doubles back to none.
func TestPieceFollowsCost(t *testing.T) {
	const target = 250 * time.Millisecond
	for _, tc := range []struct {
		name  string
		a, b  float64 // ns per slot, per record
		least int
		want  int // the piece at the end; -1: none but rare probes
		noisy bool
	}{
		{"4.7 ms a record: Target/Min per slot", 0, 4.7e6, 1, 14, false},
		{"4.7 ms a record, least 16", 0, 4.7e6, 16, 16, false},
		{"64 records/s", 0, 1e9 / 64, 1, 4, false},
		{"20 ms a slot and 1 ms a record: 4a/b", 20e6, 1e6, 1, 80, false},
		{"1 s a slot, nothing per record", 1e9, 0, 1, -1, false},
		{"1 µs a record: the floor holds less", 0, 1e3, 1, 0, false},
		// Each slot's time 0.5 to 1.5 times its cost (a lookup's latency):
		// the piece (the median of the second half) within a third of the
		// noiseless one, and a consumer whose cost is per slot still
		// rarely cut. With both costs, noisy fits may not hold, and the
		// piece then settles where a = 0 puts it, the target's
		// (Target/Min − a) ÷ b = 42.5, below the noiseless 4a/b = 80: 60
		// ± 20 takes either.
		{"4.7 ms a record, noisy", 0, 4.7e6, 1, 14, true},
		{"20 ms a slot and 1 ms a record, noisy", 20e6, 1e6, 1, 60, true},
		{"1 s a slot, nothing per record, noisy", 1e9, 0, 1, -1, true},
	} {
		c := &Controller{Target: int64(target), Min: 4, Max: 64, Slot: 512, Least: tc.least}
		var now int64
		var popped, recs uint64
		var jitter *rand.Rand
		slack := 1
		if tc.noisy {
			jitter, slack = rand.New(rand.NewPCG(1, 2)), tc.want/3
		}
		got := consume(c, tc.a, tc.b, 256, 3000, &now, &popped, &recs, jitter)
		end := got[len(got)-1]
		if tc.noisy { // the median of the second half
			half := slices.Clone(got[len(got)/2:])
			slices.Sort(half)
			end = half[len(half)/2]
		}
		if tc.want >= 0 {
			if end < tc.want-slack || end > tc.want+slack || tc.want == 0 && end != 0 {
				t.Errorf("%s: piece %d, want %d", tc.name, end, tc.want)
			}
		} else {
			cut := 0
			for _, p := range got[len(got)/2:] {
				if p > 0 {
					cut++
				}
			}
			if !tc.noisy && end != 0 || cut*10 > len(got)/2 {
				t.Errorf("%s: piece %d at the end, cut after %d of the last %d slots: want none but rare probes", tc.name, end, cut, len(got)/2)
			}
		}
		if tc.want <= 0 {
			continue
		}
		var relax []int
		for range 10 { // no backpressure
			now += int64(target)
			c.ObserveRecords(now, popped, popped, recs, 0, 0)
			relax = append(relax, c.Piece())
		}
		doubling := relax[len(relax)-1] == 0
		for i := 1; i < len(relax) && relax[i] != 0; i++ {
			doubling = doubling && relax[i] == 2*relax[i-1]
		}
		if !doubling {
			t.Errorf("%s: pieces without backpressure %v, want doubling to none", tc.name, relax)
		}
	}
}
