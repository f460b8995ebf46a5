// Package sim drives an elastic [elastic.Policy] against a deterministic
// model of a parallel region, period by period, and records the timeline.
// It is how the policies' settling time, stability, overshoot and reaction
// to a bottleneck outside the region are tested without a runtime.
//
// The model is deliberately simple (a fluid model, no queues): in a period
// with offered load λ (records/s) and N channels, the region accepts
// min(λ, capacity(N), bottleneck) records/s; when λ exceeds that, the
// splitter is blocked for the fraction 1 − accepted/λ of the period (the
// congestion index grows with the overload); channels are busy for the
// fraction accepted/capacity(N) of the period. Capacity is sub-linear: the
// k-th channel adds Efficiency^(k−1) × ChannelRate. Noise multiplies the
// offered load by (1 + Noise·z), z standard normal, from a math/rand/v2 PCG
// source seeded by Seed, so a run is reproducible. Reconfiguration costs
// nothing in the model: the channel count a policy asks for is in force for
// the whole next period.
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
	// Bottleneck caps the rate the region can emit (a slow operator or sink
	// downstream of the merger); 0 means none.
	Bottleneck float64
	// Noise is the relative standard deviation of the offered load (0.02:
	// 2 %).
	Noise float64
	// Seed seeds the noise source.
	Seed uint64
	// PeriodNs is the adaptation period in ns (0: 1 s).
	PeriodNs int64
}

func (m Model) period() int64 {
	if m.PeriodNs > 0 {
		return m.PeriodNs
	}
	return 1e9
}

// Capacity is the rate n channels sustain, bottleneck not included.
func (m Model) Capacity(n int) float64 {
	e := m.Efficiency
	if e <= 0 || e >= 1 {
		return m.ChannelRate * float64(max(n, 0))
	}
	return m.ChannelRate * (1 - math.Pow(e, float64(n))) / (1 - e)
}

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
// most the region can give for load: min(load, Bottleneck) when hi channels
// reach it.
func (m Model) Optimum(load float64, lo, hi int) int {
	best := m.Output(load, hi)
	for n := lo; n < hi; n++ {
		if m.Output(load, n) >= best {
			return n
		}
	}
	return hi
}

// OptimumLevel is the smallest level in [lo, hi] of lm whose channel count
// reaches the output of level hi for load.
func (m Model) OptimumLevel(load float64, lm elastic.LevelMap, lo, hi int) int {
	best := m.Output(load, lm.Channels(hi))
	for l := lo; l < hi; l++ {
		if m.Output(load, lm.Channels(l)) >= best {
			return l
		}
	}
	return hi
}

// Period builds the metrics the runtime would measure in one period with
// offered load (records/s) and n channels.
func (m Model) Period(load float64, n int) elastic.Period {
	ns := m.period()
	secs := float64(ns) / 1e9
	acc := m.Output(load, n)
	cong := 0.0
	if load > acc && load > 0 {
		cong = 1 - acc/load
	}
	busy := 0.0
	if c := m.Capacity(n); c > 0 {
		busy = acc / c
	}
	total := uint64(math.Round(acc * secs))
	p := elastic.Period{LengthNs: ns, Arrived: total, Departed: total, Channels: make([]elastic.ChannelStats, n)}
	for i := range p.Channels {
		recs := total / uint64(n)
		if uint64(i) < total%uint64(n) {
			recs++
		}
		p.Channels[i] = elastic.ChannelStats{
			BlockedNs: int64(math.Round(cong * float64(ns) / float64(n))),
			BusyNs:    int64(math.Round(busy * float64(ns))),
			Records:   recs,
		}
	}
	return p
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
	Decision   elastic.Decision
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
	for t := range periods {
		offered := load(t)
		if m.Noise > 0 {
			offered *= 1 + m.Noise*rng.NormFloat64()
		}
		offered = max(offered, 0)
		per := m.Period(offered, n)
		d := p.Step(per)
		tl = append(tl, Sample{
			Period:     t,
			Load:       offered,
			Channels:   n,
			Throughput: per.Throughput(),
			Congestion: per.Congestion(),
			Decision:   d,
		})
		if !d.DryRun {
			n = d.Channels
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
