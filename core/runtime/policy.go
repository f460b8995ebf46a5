package runtime

import (
	"context"
	"fmt"
	"time"

	"streamd/elastic"
)

// Control policies (docs/CONTROL.md, "Policies"): a Policy sees a Metrics
// snapshot once per period and returns the reconfigurations it wants —
// the same ones the HTTP API issues. Policy.Step is meant to be a pure
// function of the snapshots it was given (no clock, no goroutines), so a
// policy is tested with scripted snapshots. Two edges run policies:
//
//   - the job's own controller (region.elastic: the level controller or
//     DS2 through Controller, or a Region.Schedule), stepped by the
//     goroutine that routes between two source batches (at a block start
//     with source workers) once its period has passed (controller.go);
//   - RunPolicy, for a policy written in Go, on a goroutine of its own
//     with a ticker.
//
// Both take their snapshots with a meter, carry actions out as control
// requests (the HTTP API's path, control.go), are held by
// pause-controller and leave their decisions in the reconfiguration log
// and in Plan's last decision.

// Metrics is one period of a running job, as a policy sees it. Its slices
// belong to the runtime and are reused for the next period: Step must not
// keep them.
type Metrics struct {
	// Start and End are the period's boundaries (wall clock, read where
	// the snapshots were taken); Period is End − Start.
	Start, End time.Time
	Period     time.Duration
	// Channels now, and the range Scale accepts.
	Channels, MinChannels, MaxChannels int
	// Records each channel processed in the period, and Skew: the
	// largest over the mean (1 when balanced or idle).
	Records []int64
	Skew    float64
	// Throughput is records processed per second in the period; Arrival
	// the records that reached the region's splitters per second (after
	// any pre-region operator).
	Throughput, Arrival float64
	// Congestion is the fraction of the period the splitter was blocked
	// on full channel rings, in [0, 1] (Gedik et al. 2014, §4.1).
	Congestion float64
	// Backlog is the records waiting in front of the channels' operators
	// at End: routed and not yet processed, plus the source's lag where
	// it reports one (core.Lagging) and the snapshot is taken by the
	// source stage (the job's own controller; RunPolicy's snapshots have
	// no lag).
	Backlog uint64
	// LatencyP99 is the 99th percentile end-to-end latency of the
	// period (from RunPolicy's latency source; 0 when there is none).
	LatencyP99 time.Duration

	// Whole says the period ran at one channel count from Start to End
	// with the policies not held: false for the period in which a change
	// of the channel count took effect (its counters mix two sets of
	// channels), for the first period after resume-controller, and while
	// a change the policy asked for is still queued. Settled counts the
	// whole periods in a row up to this one (0 when not whole): a
	// cool-down of k periods after a change is Settled < k.
	Whole   bool
	Settled int
	// Region is the period as the elastic controllers take it
	// (elastic.Period: per channel the splitter's blocked ns, the busy ns,
	// thread CPU ns and records; the records arrived at the splitters and
	// departed; the backlog at both ends). Zero unless Whole.
	Region elastic.Period
	// Batches is the source batches read since the job started: the clock
	// of a schedule (Region.Schedule, region.elastic.random_every).
	Batches int64
}

// Action is one reconfiguration a policy asks for.
type Action struct {
	// Kind is KindScale or KindRebalance.
	Kind string
	// Channels is a scale's channel count; Target a rebalance's skew
	// (≤ 1: the job's default).
	Channels int
	Target   float64
	// Reason is logged with the reconfiguration, after "policy NAME: "
	// (RunPolicy) or "elastic NAME: " (the job's own controller).
	Reason string
	// Inputs are the figures it was decided on, logged with it (nil:
	// the period's skew and p99 latency).
	Inputs map[string]string
}

// Policy decides reconfigurations from each period's metrics.
type Policy interface {
	// Name names the policy in the reconfiguration log.
	Name() string
	// Step is given the metrics of one period and returns the actions to
	// carry out now (none: nil). It is not called while pause-controller
	// holds the job's policies.
	Step(m Metrics) []Action
}

// Decision is a policy's account of one period: what it decided and why,
// also when it asked for nothing.
type Decision struct {
	// Level decided (-1: the policy has no levels), Rule that decided,
	// Channels the count decided.
	Level    int
	Rule     string
	Channels int
	// DryRun: decided, but only to be logged.
	DryRun bool
	// Text is the decision with its reason ("level 3 channels 4 rule P1: …").
	Text string
}

// A Reporter is a Policy that accounts for every period it decides on:
// the runtime keeps the decision as the plan's last decision (`ctl
// status`), logs it (slog "elastic" for the job's own controller) and, for
// the job's own controller, writes it as a row of the --elastic-log
// timeline. Controller is one.
type Reporter interface {
	Policy
	// Decided returns the decision of the last Step; ok is false when
	// that Step decided nothing (a period it skips).
	Decided() (d Decision, ok bool)
}

// RunPolicy drives p against the running job every period until ctx is
// done or the job ends: it takes a Metrics snapshot (latency, if set, is
// asked for the period's p99), calls Step and carries out its actions
// through Live.Scale and Live.RebalanceNow, logged with reason "policy
// NAME: …". While pause-controller holds the job's policies it takes
// snapshots but calls no Step. A refused action is logged and the policy
// goes on. It returns the number of actions carried out.
func RunPolicy(ctx context.Context, l Live, p Policy, period time.Duration, latency func() time.Duration) int {
	r := l.r
	tick := time.NewTicker(period)
	defer tick.Stop()
	var mt meter
	var s sample
	start := time.Now()
	mt.observe(r.read(&s, start, false), r)
	done := 0
	for {
		select {
		case <-ctx.Done():
			return done
		case <-r.ctx.Done():
			return done
		case now := <-tick.C:
			m, ok := mt.observe(r.read(&s, now, false), r)
			if !ok || s.paused {
				continue
			}
			if latency != nil {
				m.LatencyP99 = latency()
			}
			acts := p.Step(*m)
			r.account("policy", p, m, acts, now.Sub(start))
			for _, a := range acts {
				reason := fmt.Sprintf("policy %s: %s", p.Name(), a.Reason)
				var err error
				switch a.Kind {
				case KindScale:
					_, err = l.Scale(ctx, a.Channels, reason, inputsOf(a, m))
				case KindRebalance:
					_, _, err = l.RebalanceNow(ctx, a.Target, reason)
				default:
					err = refused("policy %s: unknown action %q", p.Name(), a.Kind)
				}
				if err == nil {
					done++
				}
			}
		}
	}
}

// inputsOf is what a's reconfiguration is logged with.
func inputsOf(a Action, m *Metrics) map[string]string {
	if a.Inputs != nil {
		return a.Inputs
	}
	return map[string]string{"latency_p99": m.LatencyP99.String(), "skew": fmt.Sprintf("%.3f", m.Skew)}
}

// account keeps p's decision of the period as the plan's last decision
// and logs it: a Reporter's, or else the actions it asked for (nothing
// when it asked for none). t is the time since the policy started. It
// returns the Reporter's decision, if any.
func (r *run) account(origin string, p Policy, m *Metrics, acts []Action, t time.Duration) (Decision, bool) {
	if rp, ok := p.(Reporter); ok {
		d, ok := rp.Decided()
		if !ok {
			return d, false
		}
		applied := scales(acts)
		r.ctl.noteDecision(fmt.Sprintf("%s (t %s, applied %v)", d.Text, t.Round(time.Millisecond), applied))
		if r.log != nil {
			g := m.Region
			r.log.Info(origin, "t", t.Round(time.Millisecond), "congestion", fmt.Sprintf("%.3f", g.Congestion()),
				"throughput", fmt.Sprintf("%.0f", g.Throughput()), "arrival", fmt.Sprintf("%.0f", g.ArrivalRate()),
				"backlog", g.Backlog, "level", d.Level, "channels", d.Channels, "rule", d.Rule, "applied", applied, "reason", d.Text)
		}
		return d, true
	}
	for _, a := range acts {
		what := a.Kind
		if a.Kind == KindScale {
			what = fmt.Sprintf("scale to %d", a.Channels)
		}
		r.ctl.noteDecision(fmt.Sprintf("%s %s: %s: %s (t %s)", origin, p.Name(), what, a.Reason, t.Round(time.Millisecond)))
	}
	return Decision{}, false
}

// scales says whether acts change the channel count.
func scales(acts []Action) bool {
	for _, a := range acts {
		if a.Kind == KindScale {
			return true
		}
	}
	return false
}

// sample is what a policy's period is made of, read at one boundary: the
// region's cumulative counters (elastic.Counters: per channel the
// splitter's blocked ns, busy ns, records and thread CPU ns; records
// arrived at the splitters and departed; the backlog now), the live
// channel changes and source batches so far, and whether pause-controller
// holds the policies.
type sample struct {
	at       time.Time
	counters elastic.Counters
	rescales int64
	batches  int64
	paused   bool
}

// read fills s with the job's figures now (reusing its slices) and
// returns it. lag: the caller is the single source stage, which alone may
// ask the source for its lag (regionLoad).
func (r *run) read(s *sample, now time.Time, lag bool) *sample {
	n := int(r.curChans.Load())
	s.at = now
	c := &s.counters
	c.TimeNs = now.UnixNano()
	c.Channels = c.Channels[:0]
	var processed uint64
	for i := 0; i < n; i++ {
		rec := uint64(r.chanStats[i].Records.Load())
		processed += rec
		c.Channels = append(c.Channels, elastic.ChannelCounters{
			BlockedNs: r.blockedNs(i), BusyNs: r.chanStats[i].BusyNs.Load(), Records: rec,
			CPUNs: r.chanStats[i].CPUNs.Load()})
	}
	// Records arriving at the splitters (not recordsIn: pre-region filters
	// drop some) and those waiting in front of the channels; records
	// leaving the region are those its channels processed (a window's
	// output is much smaller than its input and bursty).
	c.Arrived, c.Backlog = r.regionLoad(lag)
	c.Departed = processed
	s.rescales = r.rescales.Load()
	s.batches = r.batchesIn.Load()
	s.paused = r.ctl.paused.Load()
	return s
}

// meter turns successive samples into Metrics. It is pure: samples in,
// periods out, no clock. Not safe for concurrent use.
type meter struct {
	window elastic.Window
	prev   sample // the last sample (its own copy of the counters)
	have   bool
	// settled counts whole periods in a row.
	settled int
	m       Metrics
}

// observe takes the next sample and returns the period since the last
// one; for the first sample, ok is false and the period is empty (Start
// = End, no records). The Metrics are the meter's, reused by the next
// call. r gives the range of channel counts (nil: 1..the count now).
func (mt *meter) observe(s *sample, r *run) (m *Metrics, ok bool) {
	m = &mt.m
	whole := mt.window.ObserveTo(s.counters, &m.Region)
	ok = mt.have
	if !ok {
		mt.keep(s)
	}
	prev := &mt.prev
	cur := s.counters.Channels
	m.Start, m.End, m.Period = prev.at, s.at, s.at.Sub(prev.at)
	m.Channels, m.MinChannels, m.MaxChannels = len(cur), 1, len(cur)
	if r != nil {
		m.MinChannels, m.MaxChannels = r.minChannels(), r.maxChannels
	}
	whole = whole && s.rescales == prev.rescales && !s.paused && !prev.paused
	m.Whole = whole
	if whole {
		mt.settled++
	} else {
		mt.settled = 0
		m.Region = elastic.Period{Channels: m.Region.Channels[:0]}
	}
	m.Settled = mt.settled
	// The figures of every period, whole or not: per channel the records
	// since the last sample (a channel added since: all of its own).
	m.Records = m.Records[:0]
	var sum, top int64
	var blocked int64
	for c, v := range cur {
		d, b := int64(v.Records), v.BlockedNs
		if c < len(prev.counters.Channels) {
			o := prev.counters.Channels[c]
			d, b = d-int64(o.Records), b-o.BlockedNs
		}
		d = max(0, d)
		m.Records = append(m.Records, d)
		sum += d
		top = max(top, d)
		blocked += max(0, b)
	}
	m.Skew = 1
	if sum > 0 {
		m.Skew = float64(top) * float64(len(cur)) / float64(sum)
	}
	m.Throughput, m.Arrival, m.Congestion = 0, 0, 0
	if sec := m.Period.Seconds(); sec > 0 {
		m.Throughput = float64(sum) / sec
		m.Arrival = float64(s.counters.Arrived-min(prev.counters.Arrived, s.counters.Arrived)) / sec
		m.Congestion = min(1, max(0, float64(blocked)/float64(m.Period)))
	}
	m.Backlog, m.Batches, m.LatencyP99 = s.counters.Backlog, s.batches, 0
	mt.keep(s)
	return m, ok
}

// keep copies s as the baseline of the next period.
func (mt *meter) keep(s *sample) {
	chans := append(mt.prev.counters.Channels[:0], s.counters.Channels...)
	mt.prev = *s
	mt.prev.counters.Channels = chans
	mt.have = true
}
