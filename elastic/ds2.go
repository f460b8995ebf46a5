package elastic

import (
	"fmt"
	"math"
)

// DS2 is the DS2 policy [DS2 §3] applied to one parallel region. Create it
// with [New] ("ds2").
//
// Each period (after Config.WarmUpPeriods of warm-up following a change) it
// measures the offered load ([Period.OfferedLoad]: records processed plus the
// backlog's growth, or the arrival rate over the time the splitter was not
// blocked when no backlog is measured), the true processing rate of one
// channel r ([Period.TrueRate]: records per second of work, thread CPU
// time when measured), the congestion index, throughput and utilisation.
// Once Config.WindowPeriods periods are in at the current count it reduces
// them with Config.Statistic and computes the target rate: the offered load
// plus Backlog / (DrainPeriods × period) (the drain term). The channel
// count it asks for keeps the channels at most (1 − CongestionThreshold)
// busy at the target:
//
//   - congested: from the measured throughput T at n channels, n +
//     ⌈(target/(1−thr) − T) / g⌉ where g is the throughput one added channel
//     brings: measured on the last change up, or T/n (linear, the paper's
//     assumption) when unknown. With linear scaling that is the optimum in
//     one step; with sub-linear scaling the measured g corrects the next.
//   - not congested: ⌈target / (r × (1−thr))⌉.
//
// Rules around that computation:
//
//   - Up only when the window is congested: without congestion the region
//     keeps up (within the tolerance the threshold sets), whatever r says.
//     Increases act at once.
//   - Check after each change up: once the window at the new count is in,
//     if it is still congested and the throughput rose by less than MinGain
//     × the channels added × the per-channel rate before, the added channels
//     did not pay (flat capacity, CPU starvation). The policy backs off to
//     the knee: the fewest channels that, scaling linearly from a measured
//     count below, reach the throughput measured; and never asks for more
//     than that again (the ceiling) until a count delivers more than both
//     the throughput measured after the change and the most any count up
//     to the ceiling was measured at before it (by the threshold's
//     margin): until the evidence changes. On a loaded machine the
//     throughput swings 2× from period to period, and a lower count
//     beating only the failed window is no news.
//   - Downstream bound: when the window is congested but the channels are on
//     average less than (1 − CongestionThreshold) busy, and not
//     descheduled (a loaded machine, below), they wait on their output,
//     not work: the bottleneck is downstream. The target is then the
//     region's own throughput, sized at (1 − CongestionThreshold) busy; such
//     a decrease acts at once. DS2 proper would scale the downstream
//     operator; outside the region it cannot.
//   - Scale-down delay: any other decrease needs Config.ScaleDownPeriods
//     consecutive uncongested periods, and goes to the largest count asked
//     for in them (a load that oscillates faster keeps its peak count). An
//     ask more than one channel below every ask in the delay starts it over:
//     the load fell again, and the asks from before the fall should not
//     decide where it settles. Each period asks for the fewest channels whose capacity, at
//     (1 − CongestionThreshold) busy, reaches its target: linear at the
//     true rate, or the measured capacities of the counts around it when
//     they give more (sub-linear scaling makes fewer channels relatively
//     faster).
//   - A loaded machine (loaded.go): a congested window with the channels
//     descheduled for more than a fifth of their busy time
//     ([Period.Descheduled]) is not judged: no change, and the check
//     after a change up waits for another window. Descheduling that lasts
//     2 × WindowPeriods periods at one count is judged as usual, except
//     that idle channels descheduled that much are never read as a
//     downstream bound.
//   - No change within Config.CoolDownPeriods periods of the last one.
type DS2 struct {
	cfg      Config
	lo, hi   int // channel limits
	channels int // last decision
	lastN    int // channel count measured in the previous period; 0 at start
	warm     int // warm-up periods left to ignore
	stay     int // periods at the current count, warm-up included
	changed  bool

	cong, tput, load, rate, util, desched series // the window at the current count
	calm                                  int    // consecutive uncongested periods
	starvedRun                            int    // consecutive periods with the channels descheduled
	asks                                  series // counts asked for in the last ScaleDownPeriods periods
	scratch                               []float64

	points   map[int]float64 // throughput of a congested window per count
	pend     check           // the change up to check
	marginal float64         // records/s one added channel brought on the last change up; 0 unknown
	ceiling  int             // most channels that paid; 0 none
	ceilT    float64         // throughput the ceiling was measured at
	ceilFrom float64         // most measured up to the ceiling before the change up that did not pay
}

// check is a change up awaiting its check: from n channels at throughput t
// and per-channel throughput r.
type check struct {
	ok    bool
	from  int
	to    int
	t, r  float64
	await bool
}

func newDS2(cfg Config) *DS2 {
	lo, hi := cfg.MinChannels, cfg.Limit()
	w := cfg.WindowPeriods
	return &DS2{cfg: cfg, lo: lo, hi: hi, channels: min(max(cfg.initial(), lo), hi),
		cong: newSeries(w), tput: newSeries(w), load: newSeries(w), rate: newSeries(w), util: newSeries(w), desched: newSeries(w),
		asks: newSeries(cfg.ScaleDownPeriods), points: map[int]float64{}}
}

// Name returns "ds2".
func (d *DS2) Name() string { return PolicyDS2 }

// Channels is the channel count of the last decision.
func (d *DS2) Channels() int { return d.channels }

// Step consumes one period's metrics and returns the channel count for the
// next period. See [DS2] for the rules.
func (d *DS2) Step(p Period) Decision {
	n := len(p.Channels)
	hold := func(rule Rule, reason string) Decision {
		d.channels = n
		return Decision{Level: -1, Channels: n, Prev: n, Rule: rule, Reason: reason}
	}
	change := func(to int, reason string) Decision {
		d.channels = to
		return Decision{Level: -1, Channels: to, Prev: n, Rule: RuleDS2, Reason: reason}
	}
	if err := p.Validate(); err != nil {
		return Decision{Level: -1, Channels: d.channels, Prev: n, Rule: RuleSkip, Reason: err.Error()}
	}
	if n != d.lastN {
		d.changed = d.lastN != 0
		d.warm = d.cfg.WarmUpPeriods
		d.lastN, d.stay, d.calm, d.starvedRun = n, 0, 0, 0
		for _, s := range []*series{&d.cong, &d.tput, &d.load, &d.rate, &d.util, &d.desched, &d.asks} {
			s.reset()
		}
	}
	if d.pend.ok && d.pend.to != n {
		d.pend.ok = false // the change up was not carried out (dry run, refused): nothing to check
	}
	if n < d.lo || n > d.hi {
		return change(min(max(n, d.lo), d.hi), fmt.Sprintf("%d channels is outside [%d, %d]", n, d.lo, d.hi))
	}
	d.stay++
	if d.warm > 0 {
		d.warm--
		return hold(RuleWarmUp, fmt.Sprintf("warm-up after a change to %d channels: metrics ignored", n))
	}

	thr := d.cfg.CongestionThreshold
	busyCap := 1 - thr
	c := p.Congestion()
	d.cong.push(c)
	d.tput.push(p.Throughput())
	d.load.push(p.OfferedLoad())
	d.rate.push(p.TrueRate())
	d.util.push(p.Utilization())
	d.desched.push(p.Descheduled())
	d.starvedRun = starvedRun(d.starvedRun, p)
	drain := 0.0
	if p.Backlog > 0 {
		drain = float64(p.Backlog) / (float64(d.cfg.DrainPeriods) * p.seconds())
	}
	if c > thr {
		d.calm = 0
		d.asks.reset()
	} else {
		d.calm++
		ask := float64(d.fewest(n, (p.OfferedLoad()+drain)/busyCap, p.TrueRate()))
		if d.asks.len() > 0 && ask < d.asks.min()-1 {
			d.asks.reset() // the load fell again: the asks before the fall should not decide
		}
		d.asks.push(ask)
	}
	if w := d.cfg.WindowPeriods; d.cong.len() < w && !majority(d.cong.xs, thr, w) {
		return hold(RuleHold, fmt.Sprintf("window %d/%d at %d channels", d.cong.len(), w, n))
	}
	st := d.cfg.Statistic
	C, T := st.of(d.cong.xs, &d.scratch), st.of(d.tput.xs, &d.scratch)
	L, r, U := st.of(d.load.xs, &d.scratch), st.of(d.rate.xs, &d.scratch), st.of(d.util.xs, &d.scratch)
	D := st.of(d.desched.xs, &d.scratch)
	cong := C > thr
	starved := loaded(D, d.starvedRun, d.cfg.WindowPeriods)
	downstream := cong && U < busyCap && D <= starvedShare
	if cong && !downstream {
		d.points[n] = max(d.points[n], T)
	}
	if d.ceiling > 0 && T > max(d.ceilT, d.ceilFrom)*(1+thr) {
		d.ceiling, d.ceilT, d.ceilFrom = 0, 0, 0 // a count delivered more than measured around the failed change
	}

	// The check after a change up; a congested window with the channels
	// descheduled says nothing about what they bring: wait for another.
	if d.pend.ok && !(cong && starved) {
		d.pend.ok = false
		gain, want := T-d.pend.t, d.cfg.MinGain*d.pend.r*float64(n-d.pend.from)
		switch {
		case !cong || downstream:
			d.marginal = 0
		case gain < want:
			k := d.knee(n, T)
			d.ceiling, d.ceilT, d.ceilFrom, d.marginal = k, T, d.pend.t, 0
			for m, tm := range d.points {
				if m <= k {
					d.ceilFrom = max(d.ceilFrom, tm)
				}
			}
			why := fmt.Sprintf("check: %d -> %d channels gave %s -> %s, less than %s more: the added channels do not pay",
				d.pend.from, n, fmtRate(d.pend.t), fmtRate(T), fmtRate(want))
			if k < n {
				return change(k, why+fmt.Sprintf("; back off to %d (linear scaling reaches %s there)", k, fmtRate(T)))
			}
		default:
			d.marginal = gain / float64(n-d.pend.from)
		}
	}
	if d.changed && d.stay < d.cfg.CoolDownPeriods {
		return hold(RuleHold, fmt.Sprintf("cool-down %d/%d after a change (congestion %.2f, throughput %s)",
			d.stay, d.cfg.CoolDownPeriods, C, fmtRate(T)))
	}

	if cong && starved {
		return hold(RuleHold, fmt.Sprintf("congested (%.2f) with the channels descheduled %.0f %% of their busy time: the machine is loaded, %d channels are not judged",
			C, 100*D, n))
	}

	target := L + drain
	what := fmt.Sprintf("offered %s", fmtRate(L))
	if drain > 0 {
		what += fmt.Sprintf(" + drain %s", fmtRate(drain))
	}
	var need int
	switch {
	case downstream:
		target = T
		what = fmt.Sprintf("downstream-bound (congestion %.2f, busy %.2f): throughput %s", C, U, fmtRate(T))
		if r <= 0 {
			return hold(RuleHold, what+" but no busy time measured")
		}
		need = ceilCount(target / (r * busyCap))
		what += fmt.Sprintf(", true rate %s per channel: need %d", fmtRate(r), need)
	case cong:
		g, gw := d.marginal, "measured"
		if g <= 0 {
			g, gw = T/float64(n), "linear"
		}
		need = n + ceilCount((target/busyCap-T)/g)
		what += fmt.Sprintf(", %s at %d channels, %s %s per added channel: need %d", fmtRate(T), n, gw, fmtRate(g), need)
	case target <= 0:
		need, what = d.lo, "idle"
	case r <= 0:
		return hold(RuleHold, what+" but no busy time measured")
	default:
		need = ceilCount(target / (r * busyCap))
		what += fmt.Sprintf(", true rate %s per channel: need %d", fmtRate(r), need)
	}
	need = min(max(need, d.lo), d.hi)
	if d.ceiling > 0 && need > d.ceiling && n <= d.ceiling {
		need = d.ceiling
		what += fmt.Sprintf("; ceiling %d (more did not pay)", d.ceiling)
	}

	switch {
	case need > n:
		if !cong {
			return hold(RuleHold, what+fmt.Sprintf("; not congested (%.2f <= %.2g): the region keeps up", C, thr))
		}
		d.pend = check{ok: true, from: n, to: need, t: T, r: T / float64(n)}
		return change(need, what)
	case need < n && downstream:
		return change(need, what)
	case need < n:
		if dn := d.cfg.ScaleDownPeriods; d.asks.len() < dn {
			return hold(RuleHold, fmt.Sprintf("%s; lower for %d/%d periods", what, d.asks.len(), dn))
		}
		down := min(max(int(d.asks.max()), need, d.lo), d.hi)
		if down >= n {
			return hold(RuleHold, fmt.Sprintf("%s; but the last %d periods asked for up to %d", what, d.asks.len(), down))
		}
		return change(down, what+fmt.Sprintf("; not congested for %d periods, largest ask %d", d.calm, down))
	}
	return hold(RuleHold, what)
}

// fewest is the fewest channels, at most n, whose capacity reaches rate
// (records/s): a count's capacity is the larger of linear scaling at the
// true rate r and what the measured counts around it give (their linear
// interpolation, a lower bound when scaling is concave). n when none does.
func (d *DS2) fewest(n int, rate, r float64) int {
	for m := d.lo; m < n; m++ {
		if float64(m)*r >= rate || d.interp(m) >= rate {
			return m
		}
	}
	return n
}

// interp is the capacity of m channels from the measured counts: measured
// at m, or interpolated between the nearest measured counts below and
// above; 0 when m is not between two of them.
func (d *DS2) interp(m int) float64 {
	if t, ok := d.points[m]; ok {
		return t
	}
	lo, hi := 0, 0
	for k := range d.points {
		if k < m && k > lo {
			lo = k
		}
		if k > m && (hi == 0 || k < hi) {
			hi = k
		}
	}
	if lo == 0 || hi == 0 {
		return 0
	}
	tl, th := d.points[lo], d.points[hi]
	return tl + (th-tl)*float64(m-lo)/float64(hi-lo)
}

// knee is where linear scaling from a measured count below n reaches
// throughput t: the fewest channels that could deliver it, at least lo.
func (d *DS2) knee(n int, t float64) int {
	k := n
	for m, tm := range d.points {
		if m >= n || tm <= 0 {
			continue
		}
		k = min(k, m+ceilCount((t-tm)/(tm/float64(m))))
	}
	return max(k, d.lo)
}

// ceilCount rounds a channel count up, tolerating float error; NaN and
// huge values give a large count that the caller clamps.
func ceilCount(x float64) int {
	if math.IsNaN(x) || x > 1e6 {
		return 1 << 20
	}
	return int(math.Ceil(x - 1e-9))
}
