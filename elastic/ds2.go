package elastic

import (
	"fmt"
	"math"
)

// DS2 is the DS2 policy [DS2 §3] applied to one parallel region. Create it
// with [New] ("ds2").
//
// Each period it computes, from useful time, the true processing rate of one
// channel, r = records processed / time busy ([Period.TrueRate]), and the
// target rate the region must sustain: the rate upstream offers
// ([Period.OfferedRate], the arrival rate over the time the splitter was not
// blocked, i.e. upstream's true output rate), plus Backlog / (DrainPeriods ×
// period) when a backlog is given. The channel count it asks for is
// ceil(target / r), clamped to [MinChannels, limit]. With linear scaling
// that is the optimum in one step; with sub-linear scaling the next
// measurement corrects it (the paper's "three steps").
//
// Rules around that computation:
//
//   - Warm-up: the first WarmUpPeriods periods after the measured channel
//     count changes (and after start) are ignored (rule "warmup").
//   - Downstream bound: when the splitter is congested but the channels are
//     on average less than (1 − CongestionThreshold) busy, the channels are
//     waiting on their output, not working: the bottleneck is downstream. The
//     target is then the region's own throughput, and the channels are sized
//     to be at most (1 − CongestionThreshold) busy at it, so the bound stays
//     visible at the new count. DS2 proper would scale the downstream
//     operator; outside the region it cannot.
//   - Jitter: a change of exactly +1 channel is made only when the period is
//     congested (congestion index > CongestionThreshold): without congestion
//     the region keeps up within the tolerance the threshold sets, as for
//     the level controller. A change of exactly −1 must be asked for in
//     max(2, ScaleDownPeriods) consecutive periods. Larger changes are not
//     jitter and follow the rules below.
//   - Scale-down window: any decrease must be asked for in ScaleDownPeriods
//     consecutive periods, and goes to the largest count asked for in them
//     (a load that oscillates faster than the window keeps its peak count).
//     A request more than one channel below every request in the window
//     starts the window over: the load fell again, and the requests from
//     before the fall should not decide where it settles. Increases act at
//     once.
type DS2 struct {
	cfg      Config
	lo, hi   int // channel limits
	channels int // last decision
	lastN    int // channel count measured in the previous period; 0 at start
	warm     int // warm-up periods left to ignore
	lows     []int
}

func newDS2(cfg Config) *DS2 {
	lo, hi := cfg.MinChannels, cfg.Limit()
	return &DS2{cfg: cfg, lo: lo, hi: hi, channels: min(max(cfg.initial(), lo), hi)}
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
	if err := p.Validate(); err != nil {
		return Decision{Level: -1, Channels: d.channels, Prev: n, Rule: RuleSkip, Reason: err.Error()}
	}
	if n != d.lastN {
		d.warm = d.cfg.WarmUpPeriods
		d.lastN, d.lows = n, d.lows[:0]
	}
	if n < d.lo || n > d.hi {
		d.channels = min(max(n, d.lo), d.hi)
		return Decision{Level: -1, Channels: d.channels, Prev: n, Rule: RuleDS2,
			Reason: fmt.Sprintf("%d channels is outside [%d, %d]", n, d.lo, d.hi)}
	}
	if d.warm > 0 {
		d.warm--
		return hold(RuleWarmUp, fmt.Sprintf("warm-up after a change to %d channels: metrics ignored", n))
	}

	thr := d.cfg.CongestionThreshold
	c := p.Congestion()
	cong := c > thr
	r := p.TrueRate()
	util := p.Utilization()
	target := p.OfferedRate()
	busyCap := 1.0
	what := fmt.Sprintf("offered %s", fmtRate(target))
	if cong && util < 1-thr {
		target, busyCap = p.Throughput(), 1-thr
		what = fmt.Sprintf("downstream-bound (congestion %.2f, busy %.2f): throughput %s", c, util, fmtRate(target))
	}
	if p.Backlog > 0 {
		drain := float64(p.Backlog) / (float64(d.cfg.DrainPeriods) * p.seconds())
		target += drain
		what += fmt.Sprintf(" + drain %s", fmtRate(drain))
	}
	var req int
	switch {
	case target <= 0:
		req = d.lo
		what = "idle"
	case r <= 0:
		return hold(RuleHold, fmt.Sprintf("%s but no busy time measured", what))
	default:
		x := target / (r * busyCap)
		req = int(math.Ceil(x - 1e-9))
		if req < 1 || math.IsNaN(x) || x > float64(d.hi) {
			req = d.hi
		}
		what += fmt.Sprintf(", true rate %s per channel: need %d", fmtRate(r), req)
	}
	req = min(max(req, d.lo), d.hi)

	switch {
	case req > n:
		d.lows = d.lows[:0]
		if req == n+1 && !cong {
			return hold(RuleHold, what+fmt.Sprintf("; +1 without congestion (%.2f <= %.2g): jitter", c, thr))
		}
	case req < n:
		need := d.cfg.ScaleDownPeriods
		if len(d.lows) > 0 && req < minInt(d.lows)-1 {
			d.lows = d.lows[:0] // the load fell again: start the window over
		}
		d.lows = append(d.lows, req)
		if maxInt(d.lows[max(len(d.lows)-need, 0):]) == n-1 {
			need = max(need, 2)
		}
		if k := max(d.cfg.ScaleDownPeriods, 2); len(d.lows) > k {
			d.lows = append(d.lows[:0], d.lows[len(d.lows)-k:]...)
		}
		if len(d.lows) < need {
			return hold(RuleHold, fmt.Sprintf("%s; decrease seen %d/%d", what, len(d.lows), need))
		}
		req = maxInt(d.lows[len(d.lows)-need:])
		d.lows = d.lows[:0]
		what += fmt.Sprintf("; decrease seen %d/%d, largest %d", need, need, req)
	default:
		d.lows = d.lows[:0]
		return hold(RuleHold, what)
	}
	d.channels = req
	return Decision{Level: -1, Channels: req, Prev: n, Rule: RuleDS2, Reason: what}
}

func minInt(xs []int) int {
	m := math.MaxInt
	for _, x := range xs {
		m = min(m, x)
	}
	return m
}

func maxInt(xs []int) int {
	m := math.MinInt
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
