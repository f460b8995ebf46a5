// Package sim drives an elastic [elastic.Policy] against a deterministic
// model of a parallel region, period by period, and records the timeline.
// It is how the policies' settling time, stability, overshoot and reaction
// to a bottleneck outside the region are tested without a runtime.
//
// The model is a fluid one with a queue in front of the region:
//
//   - Load: the source offers λ records/s in a period (the scenario's load
//     times 1 + Noise·z, z standard normal). What the region does not take
//     waits at the source: the backlog (a rate-limited source's lag, a
//     Kafka consumer's lag). A source with a backlog pushes as fast as it
//     can: it delivers λ + backlog/period, at most SourceRate.
//   - Capacity: n channels sustain Capacity(n) records/s: ChannelRate per
//     channel, each added channel Efficiency times as effective as the one
//     before (geometric), and beyond Knee channels each adds only Beyond ×
//     ChannelRate (Beyond 0: flat capacity beyond Knee). With Cores set,
//     the channels share the cores left by the SerialStages (source,
//     merger) that are not replicated: with more channel threads than those
//     cores each runs a fraction of the time (CPU starvation). CapNoise
//     varies capacity per period (relative standard deviation).
//   - Output: the region accepts min(demand, capacity, Bottleneck) records/s,
//     Bottleneck being a slow stage downstream of the merger.
//   - Metrics, as the runtime measures them: the splitter is blocked for the
//     fraction 1 − accepted/demand of the period (the congestion index);
//     BusyNs is wall time inside operators, preemption included (a starved
//     channel is "busy" while descheduled); CPUNs, when ThreadCPU is set, is
//     the thread CPU time of the work alone; Backlog, when ReportBacklog is
//     set, is the backlog at the end of the period. With CatchUp the
//     source pushes its backlog at once and the splitter is blocked until
//     it is gone (the runtime's rate-limited generator).
//   - A change of the channel count costs a pause: in the period in which a
//     change takes effect the region processes nothing for PauseNs, the
//     splitter counting it as blocked. With SkipChangePeriod the policy does
//     not see that period, as the runtime discards it (its counters mix two
//     channel counts: core/runtime's meter marks it not Metrics.Whole).
//
// [Calibrated] returns the model calibrated on the real runtime
// (docs/PERFORMANCE-LOG.md, "Elastic scaling"). Noise comes from a
// math/rand/v2 PCG source seeded by Seed, so a run is reproducible: the
// simulator has its own clock, the period number.
package sim

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"

	"streamd/elastic"
)

// Model is a parallel region's performance model. All rates in records/s.
type Model struct {
	// ChannelRate is what one channel processes per second when alone.
	ChannelRate float64
	// Efficiency in (0, 1]: the k-th channel adds Efficiency^(k−1) ×
	// ChannelRate. 1 (or 0, the zero value) scales linearly.
	Efficiency float64
	// Knee, when positive, is the channel count beyond which each added
	// channel adds only Beyond × ChannelRate (0: nothing, flat capacity).
	Knee   int
	Beyond float64
	// Measured, when not empty, replaces ChannelRate, Efficiency, Knee and
	// Beyond: Measured[k] is the records/s of k+1 channels as measured on a
	// machine ([Calibration]); beyond the last measured count the capacity
	// stays flat.
	Measured []float64
	// Cores, when positive, is the number of cores the region's channels
	// and the SerialStages share; channel threads beyond Cores −
	// SerialStages run a fraction of the time each (CPU starvation).
	// SerialStages is in cores: 2 for a source and a merger that each keep
	// a core busy, 0.5 for two that take half a core between them.
	Cores        int
	SerialStages float64
	// Bottleneck caps the rate the region can emit (a slow operator or sink
	// downstream of the merger); 0 means none.
	Bottleneck float64
	// SourceRate caps what the source delivers while it catches up on a
	// backlog (0: no cap).
	SourceRate float64
	// Noise is the relative standard deviation of the offered load per
	// period (0.05: 5 %); CapNoise that of the capacity.
	Noise    float64
	CapNoise float64
	// Steal, in [0, 1], is the probability that in a period work outside
	// the job (a loaded machine: other engineers' builds) takes the share
	// StealShare (default 1/3) of the cores for the whole period: with
	// Cores set, the channels share the cores left less that share (and
	// less the SerialStages); without, the region runs at 1 − StealShare of
	// its capacity. The channels' thread CPU per record is unchanged; half
	// of the extra time they are descheduled counts as busy (inside
	// operators), half falls where they wait on rings. On the runtime, 2
	// channels on the loaded 2-vCPU VM were busy 0.71 of a period with 0.44
	// of thread CPU, at about two thirds of their quiet throughput
	// (docs/PERFORMANCE-LOG.md, "A loaded machine").
	Steal      float64
	StealShare float64
	// Seed seeds the noise source.
	Seed uint64
	// PeriodNs is the adaptation period in ns (0: 1 s).
	PeriodNs int64
	// PauseNs is the cost of one change of the channel count: the time, in
	// ns, the region processes nothing in the period the change takes effect.
	PauseNs int64
	// SkipChangePeriod hides the period in which a change takes effect from
	// the policy, as the runtime does.
	SkipChangePeriod bool
	// ThreadCPU reports ChannelStats.CPUNs (thread CPU time of the work).
	ThreadCPU bool
	// Lossy drops what the region does not take instead of queueing it:
	// no backlog (the idealised model of the first tests, a sampling
	// source).
	Lossy bool
	// ReportBacklog reports Period.Backlog (the runtime's source lag and
	// ring occupancy); without it the backlog exists but is invisible.
	ReportBacklog bool
	// CatchUp makes a source with a backlog push it as fast as the
	// splitter can (a rate-limited generator's lag on the runtime, whose
	// due records are all ready at once): the splitter is blocked for as
	// long as the backlog lasts, so the congestion index is at least the
	// fraction of the period until the backlog is gone (1 while it grows).
	// Without it the congestion index is the share of the demand (load
	// plus backlog spread over the period) the region did not take. The
	// records processed are the same either way.
	CatchUp bool
}

// Calibrated returns the model of one channel of examples/elastic on the real
// runtime, scaled to channelRate records/s per channel, with noise: a 1 s
// period, a 30 ms pause per change (docs/PERFORMANCE-LOG.md, "Elastic
// scaling": channel pauses p99 up to 28 ms and the source's drain wait up to
// 22 ms at 1 M keys on 2 vCPUs; the median is 0.1–0.2 ms, so this is the
// worst case), the change period hidden from the policy (core/runtime resets
// its window after a change), two serial stages (the source and the merger),
// the backlog and thread CPU reported (what core/runtime feeds after this
// work); the source catches up as fast as the region takes records.
func Calibrated(channelRate, noise float64, seed uint64) Model {
	return Model{
		ChannelRate: channelRate, Noise: noise, Seed: seed,
		PeriodNs: 1e9, PauseNs: 30e6, SkipChangePeriod: true,
		SerialStages: 2, ThreadCPU: true, ReportBacklog: true,
	}
}

func (m Model) period() int64 {
	if m.PeriodNs > 0 {
		return m.PeriodNs
	}
	return 1e9
}

// curve is the capacity of n channels each running all the time.
func (m Model) curve(n int) float64 {
	n = max(n, 0)
	if k := len(m.Measured); k > 0 {
		if n == 0 {
			return 0
		}
		return m.Measured[min(n, k)-1]
	}
	extra := 0.0
	if m.Knee > 0 && n > m.Knee {
		extra = m.Beyond * m.ChannelRate * float64(n-m.Knee)
		n = m.Knee
	}
	e := m.Efficiency
	if e <= 0 || e >= 1 {
		return m.ChannelRate*float64(n) + extra
	}
	return m.ChannelRate*(1-math.Pow(e, float64(n)))/(1-e) + extra
}

// share is the fraction of the time each of n channel threads runs: 1
// unless the channels outnumber the cores the serial stages leave.
func (m Model) share(n int) float64 { return m.shareOf(n, 1) }

// shareOf is share with only the fraction keep of the cores available
// (the rest stolen by work outside the job). Without Cores set, keep
// scales the share directly.
func (m Model) shareOf(n int, keep float64) float64 {
	if n <= 0 {
		return 1
	}
	if m.Cores <= 0 {
		return keep
	}
	free := float64(m.Cores)*keep - m.SerialStages
	if keep == 1 {
		free = max(free, 1)
	}
	return min(1, max(free, 0.05)/float64(n))
}

// stealShare is StealShare, or 1/3 when unset.
func (m Model) stealShare() float64 {
	if m.StealShare > 0 {
		return min(m.StealShare, 0.95)
	}
	return 1.0 / 3
}

// Capacity is the rate n channels sustain, bottleneck not included.
func (m Model) Capacity(n int) float64 { return m.curve(n) * m.share(n) }

// Output is the rate n channels emit for an offered load: min(load,
// Capacity(n), Bottleneck).
func (m Model) Output(load float64, n int) float64 {
	out := min(load, m.Capacity(n))
	if m.Bottleneck > 0 {
		out = min(out, m.Bottleneck)
	}
	return out
}

// Optimum is the smallest channel count in [lo, hi] whose output is the
// most the region can give for load: the output of the best count in
// [lo, hi] (with CPU starvation more channels can give less).
func (m Model) Optimum(load float64, lo, hi int) int {
	best := 0.0
	for n := lo; n <= hi; n++ {
		best = max(best, m.Output(load, n))
	}
	for n := lo; n < hi; n++ {
		if m.Output(load, n) >= best*(1-1e-9) {
			return n
		}
	}
	return hi
}

// OptimumLevel is the smallest level in [lo, hi] of lm whose channel count
// reaches the best output over the levels for load.
func (m Model) OptimumLevel(load float64, lm elastic.LevelMap, lo, hi int) int {
	best := 0.0
	for l := lo; l <= hi; l++ {
		best = max(best, m.Output(load, lm.Channels(l)))
	}
	for l := lo; l < hi; l++ {
		if m.Output(load, lm.Channels(l)) >= best*(1-1e-9) {
			return l
		}
	}
	return hi
}

// Period builds the metrics the runtime would measure in one period with
// offered load (records/s), no backlog, no pause and n channels.
func (m Model) Period(load float64, n int) elastic.Period {
	p, _ := m.step(load, 0, 0, 1, 1, n)
	return p
}

// step runs one period: offered load (records/s), backlog at its start
// (records), the pause in it (ns), the capacity factor (noise), the
// fraction of the cores left to the job (keep, 1 when none is stolen) and
// n channels. It returns the measured period and
// the backlog at its end.
func (m Model) step(load, backlog float64, pauseNs int64, capFactor, keep float64, n int) (elastic.Period, float64) {
	ns := m.period()
	secs := float64(ns) / 1e9
	run := max(0, 1-float64(pauseNs)/float64(ns)) // fraction of the period the region runs
	demand := load + backlog/secs
	if m.SourceRate > 0 && backlog > 0 {
		demand = min(demand, max(m.SourceRate, load))
	}
	capacity := m.curve(n) * m.shareOf(n, keep) * capFactor
	if m.Bottleneck > 0 {
		capacity = min(capacity, m.Bottleneck)
	}
	acc := min(demand, capacity) * run
	cong := 0.0
	if demand > 0 {
		cong = clamp01(1 - acc/demand)
	}
	if m.CatchUp {
		cong = max(cong, backlogTime(load, backlog, capacity*run, secs)/secs)
	}
	work := 0.0 // fraction of the period each channel spends working (CPU)
	if c := m.curve(n) * capFactor; c > 0 {
		work = acc / c
	}
	wall := min(1, work/m.share(n)) // inside operators, preemption included
	if keep < 1 {
		stolen := work/m.shareOf(n, keep) - work/m.share(n)
		wall = min(1, wall+stolen/2) // half the stolen time inside operators
	}
	total := uint64(math.Round(acc * secs))
	left := max(0, backlog+(load*secs)-float64(total))
	if m.Lossy {
		left = 0
	}
	p := elastic.Period{LengthNs: ns, Arrived: total, Departed: total, Channels: make([]elastic.ChannelStats, n)}
	if m.ReportBacklog {
		p.Backlog = uint64(math.Round(left))
		p.PrevBacklog = uint64(math.Round(backlog))
	}
	for i := range p.Channels {
		recs := total / uint64(n)
		if uint64(i) < total%uint64(n) {
			recs++
		}
		cs := elastic.ChannelStats{
			BlockedNs: int64(math.Round(cong * float64(ns) / float64(n))),
			BusyNs:    int64(math.Round(wall * float64(ns))),
			Records:   recs,
		}
		if m.ThreadCPU {
			cs.CPUNs = int64(math.Round(work * float64(ns)))
		}
		p.Channels[i] = cs
	}
	return p, left
}

func clamp01(x float64) float64 { return min(1, max(0, x)) }

// backlogTime is how long, in seconds, a backlog lasts in a period of secs
// seconds that starts with backlog records, with load offered and capacity
// taken (records/s): the whole period while the load is at least the
// capacity (and there is something to queue), else until the backlog is
// drained.
func backlogTime(load, backlog, capacity, secs float64) float64 {
	switch {
	case load > capacity || (load == capacity && backlog > 0):
		return secs
	case backlog <= 0:
		return 0
	}
	return min(secs, backlog/(capacity-load))
}

// Load is the offered load in records/s in period t (t from 0).
type Load func(t int) float64

// Constant offers rate in every period.
func Constant(rate float64) Load { return func(int) float64 { return rate } }

// Point is a change of a [Schedule]: from period At on, the load is Rate.
type Point struct {
	At   int
	Rate float64
}

// Schedule offers a piecewise-constant load: the Rate of the last point
// whose At <= t (points in increasing At; before the first, its Rate).
func Schedule(points ...Point) Load {
	return func(t int) float64 {
		r := 0.0
		for i, p := range points {
			if i == 0 || p.At <= t {
				r = p.Rate
			}
		}
		return r
	}
}

// Sine offers mean × (1 + amplitude × sin(2π t / cycle)), cycle in periods.
func Sine(mean, amplitude float64, cycle int) Load {
	return func(t int) float64 {
		return mean * (1 + amplitude*math.Sin(2*math.Pi*float64(t)/float64(cycle)))
	}
}

// Sample is one period of a run.
type Sample struct {
	Period     int
	Load       float64 // offered in this period, noise included, records/s
	Channels   int     // channels the region ran with
	Throughput float64 // records/s out of the region
	Congestion float64 // congestion index
	Backlog    float64 // records waiting at the source at the period's end
	// Hidden marks a period the policy did not see (SkipChangePeriod);
	// its Decision keeps the channel count.
	Hidden   bool
	Decision elastic.Decision
}

// Timeline is a run, one Sample per period.
type Timeline []Sample

// Run drives p for the given number of periods. The region starts with
// p.Channels() channels and, after each period, runs with the decision's
// channel count unless the decision is a dry run.
func Run(m Model, p elastic.Policy, load Load, periods int) Timeline {
	rng := rand.New(rand.NewPCG(m.Seed, m.Seed^0x9e3779b97f4a7c15))
	n := p.Channels()
	tl := make(Timeline, 0, periods)
	backlog := 0.0
	changed := false // a change takes effect in this period
	for t := range periods {
		offered := load(t)
		capFactor := 1.0
		if m.Noise > 0 {
			offered *= 1 + m.Noise*rng.NormFloat64()
		}
		if m.CapNoise > 0 {
			capFactor = max(0.05, 1+m.CapNoise*rng.NormFloat64())
		}
		offered = max(offered, 0)
		keep := 1.0
		if m.Steal > 0 && rng.Float64() < m.Steal {
			keep = 1 - m.stealShare()
		}
		var pause int64
		if changed {
			pause = m.PauseNs
		}
		per, left := m.step(offered, backlog, pause, capFactor, keep, n)
		backlog = left
		s := Sample{Period: t, Load: offered, Channels: n, Throughput: per.Throughput(),
			Congestion: per.Congestion(), Backlog: left}
		if changed && m.SkipChangePeriod {
			s.Hidden = true
			s.Decision = elastic.Decision{Level: -1, Channels: n, Prev: n, Rule: elastic.RuleSkip, Reason: "change period hidden"}
			tl = append(tl, s)
			changed = false
			continue
		}
		d := p.Step(per)
		s.Decision = d
		tl = append(tl, s)
		changed = false
		if !d.DryRun && d.Channels != n {
			n, changed = d.Channels, true
		}
	}
	return tl
}

// Changes counts the periods in [from, to) after which the channel count
// changed.
func (tl Timeline) Changes(from, to int) int {
	k := 0
	for _, s := range tl[max(from, 0):min(to, len(tl))] {
		if s.Decision.Changed() && !s.Decision.DryRun {
			k++
		}
	}
	return k
}

// SettledAt is the first period from which the channel count stays want
// until the end of the timeline (within [from, len)), or -1 if it never
// does.
func (tl Timeline) SettledAt(from, want int) int {
	at := -1
	for _, s := range tl[max(from, 0):] {
		switch {
		case s.Channels != want:
			at = -1
		case at < 0:
			at = s.Period
		}
	}
	return at
}

// MaxChannels is the most channels used in periods [from, to).
func (tl Timeline) MaxChannels(from, to int) int {
	m := 0
	for _, s := range tl[max(from, 0):min(to, len(tl))] {
		m = max(m, s.Channels)
	}
	return m
}

// Served is the fraction of the records offered in periods [from, to)
// that the region processed in them (records/records; 1 when nothing was
// offered).
func (tl Timeline) Served(from, to int) float64 {
	var in, out float64
	for _, s := range tl[max(from, 0):min(to, len(tl))] {
		in += s.Load
		out += s.Throughput
	}
	if in <= 0 {
		return 1
	}
	return out / in
}

// MaxBacklog is the largest backlog, in records, at the end of a period in
// [from, to).
func (tl Timeline) MaxBacklog(from, to int) float64 {
	b := 0.0
	for _, s := range tl[max(from, 0):min(to, len(tl))] {
		b = max(b, s.Backlog)
	}
	return b
}

// Final is the last sample.
func (tl Timeline) Final() Sample { return tl[len(tl)-1] }

// Write prints the timeline as a table, one period a line.
func (tl Timeline) Write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%6s %10s %4s %10s %5s  %s\n", "period", "load", "ch", "out", "cong", "decision")
	for _, s := range tl {
		fmt.Fprintf(&b, "%6d %10.0f %4d %10.0f %5.2f  %s\n", s.Period, s.Load, s.Channels, s.Throughput, s.Congestion, s.Decision)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
