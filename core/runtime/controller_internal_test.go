package runtime

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"streamd/elastic"
)

// oldControlled is the elastic controller's loop as it ran before it
// became a Policy (rescale.go's controlled.next at c630fcb), verbatim but
// for its inputs: the counters and the pause flag are given instead of
// read from the run, and what it logged is returned as the decision.
type oldControlled struct {
	policy      elastic.Policy
	period      time.Duration
	window      elastic.Window
	start, last time.Time
	paused      bool
}

func (c *oldControlled) next(now time.Time, snapshot elastic.Counters, paused bool) (elastic.Decision, bool) {
	if c.start.IsZero() {
		c.start, c.last = now, now
		c.window.Observe(snapshot)
		return elastic.Decision{}, false
	}
	if now.Sub(c.last) < c.period {
		return elastic.Decision{}, false
	}
	c.last = now
	if paused {
		c.window.Reset()
		c.paused = true
		return elastic.Decision{}, false
	}
	if c.paused {
		c.paused = false
		c.window.Observe(snapshot)
		return elastic.Decision{}, false
	}
	p, ok := c.window.Observe(snapshot)
	if !ok {
		return elastic.Decision{}, false
	}
	d := c.policy.Step(p)
	if d.Changed() && !d.DryRun {
		c.window.Reset()
	}
	return d, true
}

// regionModel makes a region's cumulative counters from an offered load
// that wanders: each channel processes up to capacity records/s, the
// splitter blocks for the share of the period the excess takes, and the
// backlog grows by what is not processed.
type regionModel struct {
	rnd      *rand.Rand
	channels int
	load     float64 // records/s offered
	capacity float64 // records/s per channel
	c        elastic.Counters
	rescales int64
	batches  int64
	backlog  float64
}

func (rm *regionModel) advance(dt time.Duration) {
	sec := dt.Seconds()
	rm.load = max(1000, rm.load*(0.9+0.2*rm.rnd.Float64()))
	if rm.rnd.IntN(50) == 0 {
		rm.load *= 3 // a step up
	}
	if rm.rnd.IntN(50) == 0 {
		rm.load /= 3
	}
	capTotal := rm.capacity * float64(rm.channels)
	done := min(rm.load+rm.backlog/max(sec, 1e-9), capTotal) * sec
	rm.backlog = max(0, rm.backlog+rm.load*sec-done)
	blocked := 0.0
	if rm.load > capTotal {
		blocked = (rm.load - capTotal) / rm.load
	}
	for len(rm.c.Channels) < rm.channels {
		rm.c.Channels = append(rm.c.Channels, elastic.ChannelCounters{})
	}
	rm.c.Channels = rm.c.Channels[:rm.channels]
	for i := range rm.c.Channels {
		ch := &rm.c.Channels[i]
		share := done / float64(rm.channels)
		ch.Records += uint64(share)
		ch.BusyNs += int64(share / rm.capacity * 1e9)
		ch.CPUNs += int64(share / rm.capacity * 0.9e9)
		ch.BlockedNs += int64(blocked * sec * 1e9 / float64(rm.channels))
	}
	rm.c.TimeNs += int64(dt)
	rm.c.Arrived += uint64(done)
	rm.c.Departed += uint64(done)
	rm.c.Backlog = uint64(rm.backlog)
	rm.batches++
}

// resize is a live change to n channels (the controller's or another's).
func (rm *regionModel) resize(n int) {
	if n != rm.channels {
		rm.channels = n
		rm.rescales++
	}
}

// The level controller and DS2 decide the same on the policy path
// (stepper + meter + Controller) as on the old path (controlled.next)
// when both are given the same counters at the same times: random
// intervals between calls (several per period), pauses and resumes, and
// changes of the channel count they did not decide (the control plane's);
// in a dry run neither asks for a change.
func TestControllerDecidesAsBefore(t *testing.T) {
	for _, policy := range []string{"levels", "ds2", "dry run"} {
		for seed := uint64(1); seed <= 8; seed++ {
			cfg := elastic.DefaultConfig()
			cfg.MaxChannels, cfg.InitialChannels, cfg.ScaleDownPeriods = 12, 2, 4
			cfg.DrainPeriods = 4
			name := policy
			if policy == "dry run" {
				name = "levels"
			}
			oldP, err := elastic.New(name, cfg)
			if err != nil {
				t.Fatal(err)
			}
			newP, _ := elastic.New(name, cfg)
			if policy == "dry run" {
				oldP, newP = elastic.NewDryRun(oldP), elastic.NewDryRun(newP)
			}
			period := time.Duration(cfg.PeriodNs)
			old := &oldControlled{policy: oldP, period: period}
			st := &stepper{p: NewController(newP), period: period}
			rnd := rand.New(rand.NewPCG(seed, 7))
			rm := &regionModel{rnd: rnd, channels: 2, load: 30000, capacity: 20000}
			at := time.Unix(1_700_000_000, 0)
			rm.c.TimeNs = at.UnixNano()
			paused := false
			decisions := 0
			for call := range 3000 {
				dt := time.Duration(50+rnd.IntN(400)) * time.Millisecond
				at = at.Add(dt)
				rm.advance(dt)
				switch rnd.IntN(200) {
				case 0:
					paused = !paused
				case 1: // a scale through the control plane
					if n := 1 + rnd.IntN(cfg.MaxChannels); n != rm.channels {
						rm.resize(n)
						old.window.Reset() // as control.go's resetController did
					}
				}
				snap := rm.c
				snap.Channels = append([]elastic.ChannelCounters(nil), rm.c.Channels...)
				od, oStepped := old.next(at, snap, paused)
				read := func(s *sample) *sample {
					s.at, s.counters, s.rescales, s.batches, s.paused = at, snap, rm.rescales, rm.batches, paused
					return s
				}
				_, acts, stepped := st.decide(at, read, nil)
				nd, nStepped := st.p.(Reporter).Decided()
				nStepped = nStepped && stepped
				if oStepped != nStepped || (oStepped && od.String() != nd.Text) {
					t.Fatalf("%s seed %d call %d: old stepped %v (%v), new %v (%q)", policy, seed, call, oStepped, od, nStepped, nd.Text)
				}
				want := 0
				if oStepped && od.Changed() && !od.DryRun {
					want = od.Channels
					decisions++
				}
				got := 0
				for _, a := range acts {
					got = a.Channels
				}
				if got != want {
					t.Fatalf("%s seed %d call %d: new path asks for %d channels, old for %d (%v)", policy, seed, call, got, want, od)
				}
				if want > 0 {
					rm.resize(want)
				}
			}
			if decisions < 3 && policy != "dry run" {
				t.Fatalf("%s seed %d: only %d changes decided: the script does not exercise the controller", policy, seed, decisions)
			}
			t.Logf("%s seed %d: %d changes", policy, seed, decisions)
		}
	}
}

// A schedule (Region.Schedule, random_every) is asked about every source
// batch, in order, and scales to its last answer that differs from the
// channel count.
func TestScheduleAsksEveryBatch(t *testing.T) {
	var asked []int64
	st := &stepper{p: &schedule{f: func(b int64) int {
		asked = append(asked, b)
		if b%3 == 0 {
			return int(b)
		}
		return 0
	}}}
	at := time.Unix(1, 0)
	var got []string
	for _, batches := range []int64{1, 2, 5, 6, 6, 9} {
		at = at.Add(time.Millisecond)
		read := func(s *sample) *sample {
			s.at, s.batches, s.counters.Channels = at, batches, make([]elastic.ChannelCounters, 2)
			return s
		}
		_, acts, _ := st.decide(at, read, nil)
		for _, a := range acts {
			got = append(got, fmt.Sprintf("%s %d (%s)", a.Kind, a.Channels, a.Reason))
		}
	}
	if fmt.Sprint(asked) != "[1 2 3 4 5 6 7 8 9]" {
		t.Errorf("asked about batches %v", asked)
	}
	if want := "[scale 3 (batch 5) scale 6 (batch 6) scale 9 (batch 9)]"; fmt.Sprint(got) != want {
		t.Errorf("actions %v, want %s", got, want)
	}
}

// The meter allocates nothing per period once its slices have grown.
func TestMeterAllocs(t *testing.T) {
	var mt meter
	s := &sample{counters: elastic.Counters{Channels: make([]elastic.ChannelCounters, 4)}}
	at := time.Unix(1, 0)
	allocs := testing.AllocsPerRun(100, func() {
		at = at.Add(time.Second)
		s.at, s.counters.TimeNs = at, at.UnixNano()
		for i := range s.counters.Channels {
			s.counters.Channels[i].Records += 1000
		}
		mt.observe(s, nil)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per period", allocs)
	}
}
