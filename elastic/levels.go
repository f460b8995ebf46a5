package elastic

import (
	"fmt"
	"math"
	"strings"
)

// LevelState is what the level controller remembers about one level
// [TPDS14 §4]. A level not visited since the controller last forgot it is
// unknown: P1 never refuses to climb into it, and P2 and P5 (which need
// facts about the level below) treat it as unmeasured.
type LevelState struct {
	// Known is set once a window is complete at the level and cleared when
	// a load increase forgets it (P3).
	Known bool
	// LastPeriod is the number of the last period observed at this level
	// (periods are numbered from 1), 0 when unknown.
	LastPeriod int64
	// Congested is whether the last window at this level was congested.
	Congested bool
	// Throughput is the last window's throughput, in records/s.
	Throughput float64
	// Capacity is the best throughput of a congested window at this level,
	// in records/s (congested, the level delivered what it can), or 0 when
	// unknown; CapacityPeriod is the period it was measured in. An
	// uncongested window with a higher throughput forgets it.
	Capacity       float64
	CapacityPeriod int64
}

// Levels is the elastic level controller of [TPDS14 §4]. Create it with
// [New] ("levels").
//
// The region runs at a level L in [lo, L*] with N(L) channels (P6,
// [LevelMap]). The controller collects each period's congestion index and
// throughput at the current level; once Config.WindowPeriods periods are in
// (after Config.WarmUpPeriods of warm-up following a change), it reduces
// them with Config.Statistic: the window is congested when that congestion
// index exceeds Config.CongestionThreshold, and its throughput is what the
// level delivered. A congested window's throughput is the level's
// capacity; the best one is kept, with its period. A window that is not in
// yet decides early when more than half of it is congested already (the
// median cannot change any more). A congested window whose backlog
// (Period.Backlog) falls fast enough to be gone within Config.DrainPeriods
// counts as not congested: the region is catching up. Then:
//
//   - P3, P4: a congested window above the level's known capacity by more
//     than α × capacity / N(L) (the change sensitivity) means more capacity
//     than before: the levels above are forgotten.
//   - P5: congested at L, the level below congested within
//     Config.MemoryPeriods, and L brought no gain over it (the gain rule
//     below): the bottleneck is outside the region; go down to L−1.
//   - P1: congested: go up to L+1, unless L = L* or L+1's known capacity is
//     no gain over L's throughput.
//   - P2: not congested for Config.ScaleDownPeriods consecutive periods:
//     go down to the lowest level whose capacity, less the congestion
//     threshold's margin, carries the largest throughput of those periods.
//     A level's capacity is its measurement, or else the nearest measured
//     level above scaled by the channel ratio (a lower bound when scaling is
//     sub-linear). A level below with no capacity known and none to scale
//     from is probed, one level at a time, as in the paper.
//   - Gain rule: going from level lo to hi pays when the throughput rises by
//     at least Config.MinGain × (N(hi) − N(lo)) × the throughput per channel
//     measured at lo: judged against the measured scaling, so a sub-linear
//     region keeps climbing while each channel still brings something.
//   - A loaded machine (loaded.go): a congested window with the channels
//     descheduled for more than a fifth of their busy time
//     ([Period.Descheduled]) is not judged (no P1, P3, P5) and not
//     remembered, unless the descheduling lasted 2 × WindowPeriods periods
//     at the level.
//   - No change within Config.CoolDownPeriods periods of the last one.
//
// Deviations from [TPDS14], each deliberate (the simulator scenarios in
// sim/testdata/scenarios show why):
//
//   - Decisions from a window of periods, not one, and a cool-down: one
//     noisy period moves nothing.
//   - The best throughput per level with its age, not the last one; P5
//     compares only with a recent observation at the level below.
//   - The gain rule uses MinGain, not α: with α = 0.5 scaling of less than
//     half the ideal passes for a bottleneck outside the region.
//   - Load decreases do not forget the levels below: a level's capacity
//     does not depend on the load. Instead P2 waits for the scale-down delay
//     and compares the load with the capacity below, so a noisy load near a
//     level's capacity neither probes the level below again and again nor
//     cycles; and it goes down several levels at once when the capacities
//     say so.
//   - Windows taken while the machine is loaded by other work are left
//     unjudged: with the channels preempted, a level's throughput says
//     nothing about its capacity.
//   - The controller trusts the measured channel count (len(Period.Channels))
//     over its own last decision, and a count that is off the level map or
//     outside the limits is moved onto the map (rule P6) without being
//     recorded.
type Levels struct {
	cfg    Config
	lm     LevelMap
	lo, hi int
	level  int // level of the last decision
	mem    []LevelState
	period int64

	prevObs int  // level observed in the previous period; -1 none
	changed bool // the current stay began with a change of the count
	stay    int  // periods seen in the current stay, warm-up included
	warm    int  // warm-up periods left in the current stay

	cong, tput series // the window at the current level
	drain      series // backlog drain rate, records/s, in the window
	desched    series // Period.Descheduled in the window
	starvedRun int    // consecutive periods with the channels descheduled
	calm       int    // consecutive uncongested periods at the current level
	recent     series // throughput of the last ScaleDownPeriods periods
	scratch    []float64
}

func newLevels(cfg Config) *Levels {
	lm := cfg.Map()
	l := &Levels{
		cfg:     cfg,
		lm:      lm,
		lo:      lm.Level(cfg.MinChannels),
		hi:      lm.MaxLevel(cfg.Limit()),
		prevObs: -1,
		cong:    newSeries(cfg.WindowPeriods),
		tput:    newSeries(cfg.WindowPeriods),
		drain:   newSeries(cfg.WindowPeriods),
		desched: newSeries(cfg.WindowPeriods),
		recent:  newSeries(cfg.ScaleDownPeriods),
	}
	l.level = min(max(lm.Level(cfg.initial()), l.lo), l.hi)
	l.mem = make([]LevelState, l.hi+1)
	return l
}

// Name returns "levels".
func (l *Levels) Name() string { return PolicyLevels }

// Channels is N(L) for the level of the last decision.
func (l *Levels) Channels() int { return l.lm.Channels(l.level) }

// Level is the level of the last decision.
func (l *Levels) Level() int { return l.level }

// Range returns the lowest level (from Config.MinChannels) and L* (from
// Config.Limit).
func (l *Levels) Range() (lo, hi int) { return l.lo, l.hi }

// Memory returns a copy of what the controller remembers, indexed by level
// (0 to L*; levels below the lowest one are never visited).
func (l *Levels) Memory() []LevelState { return append([]LevelState(nil), l.mem...) }

// Step consumes one period's metrics and returns the level and channel
// count for the next period. See [Levels] for the rules.
func (l *Levels) Step(p Period) Decision {
	n := len(p.Channels)
	if err := p.Validate(); err != nil {
		return Decision{Level: l.level, Channels: l.Channels(), Prev: n, Rule: RuleSkip, Reason: err.Error()}
	}
	l.period++
	obs := l.lm.Floor(n)
	if l.lm.Channels(obs) != n || obs < l.lo || obs > l.hi {
		target := min(max(l.lm.Level(n), l.lo), l.hi)
		l.level, l.prevObs = target, -1
		return Decision{Level: target, Channels: l.lm.Channels(target), Prev: n, Rule: RuleP6, Reason: fmt.Sprintf(
			"%d channels is not a level in [%d, %d] (%d..%d channels): move to level %d",
			n, l.lo, l.hi, l.lm.Channels(l.lo), l.lm.Channels(l.hi), target)}
	}
	var notes []string
	if obs != l.level {
		notes = append(notes, fmt.Sprintf("runs at level %d, not %d", obs, l.level))
	}
	if obs != l.prevObs { // a new stay
		l.changed = l.prevObs >= 0
		l.warm = 0
		if l.changed {
			l.warm = l.cfg.WarmUpPeriods
		}
		l.stay, l.calm = 0, 0
		l.cong.reset()
		l.tput.reset()
		l.drain.reset()
		l.desched.reset()
		l.starvedRun = 0
		l.recent.reset()
		l.prevObs = obs
	}
	l.level = obs
	l.stay++
	hold := func(rule Rule, why string) Decision {
		notes = append(notes, why)
		return Decision{Level: obs, Channels: n, Prev: n, Rule: rule, Reason: strings.Join(notes, "; ")}
	}
	if l.warm > 0 {
		l.warm--
		return hold(RuleWarmUp, fmt.Sprintf("warm-up after a change to level %d: metrics ignored", obs))
	}

	thr := l.cfg.CongestionThreshold
	c, t := p.Congestion(), p.Throughput()
	l.cong.push(c)
	l.tput.push(t)
	if c > thr {
		l.calm = 0
		l.recent.reset()
	} else {
		l.calm++
		l.recent.push(t)
	}
	l.drain.push(p.drainRate())
	l.desched.push(p.Descheduled())
	l.starvedRun = starvedRun(l.starvedRun, p)
	w := l.cfg.WindowPeriods
	if l.cong.len() < w && !majority(l.cong.xs, thr, w) {
		return hold(RuleHold, fmt.Sprintf("window %d/%d at level %d", l.cong.len(), w, obs))
	}
	C := l.cfg.Statistic.of(l.cong.xs, &l.scratch)
	T := l.cfg.Statistic.of(l.tput.xs, &l.scratch)
	cong := C > thr
	if cong && p.Backlog > 0 {
		if dr := l.cfg.Statistic.of(l.drain.xs, &l.scratch); dr > 0 && float64(p.Backlog)/dr <= float64(l.cfg.DrainPeriods)*p.seconds() {
			notes = append(notes, fmt.Sprintf("congested (%.2f) but the backlog %s drains at %s: gone within %d periods",
				C, fmtRate(float64(p.Backlog)), fmtRate(dr), l.cfg.DrainPeriods))
			cong = false
			C = min(C, thr)
		}
	}
	if D := l.cfg.Statistic.of(l.desched.xs, &l.scratch); cong && loaded(D, l.starvedRun, w) {
		return hold(RuleHold, fmt.Sprintf("congested (%.2f) with the channels descheduled %.0f %% of their busy time: the machine is loaded, level %d is not judged",
			C, 100*D, obs))
	}
	m := &l.mem[obs]

	// P3, P4: more capacity than known at this level forgets the levels above.
	if cong && m.Capacity > 0 && T > m.Capacity+l.cfg.Sensitivity*m.Capacity/float64(n) {
		l.forget(obs+1, l.hi)
		notes = append(notes, fmt.Sprintf("P3 throughput %s above the capacity %s known at level %d: forget levels above",
			fmtRate(T), fmtRate(m.Capacity), obs))
	}
	m.Known, m.LastPeriod, m.Congested, m.Throughput = true, l.period, cong, T
	switch {
	case cong && (T > m.Capacity || l.period-m.CapacityPeriod > int64(l.cfg.MemoryPeriods)):
		m.Capacity, m.CapacityPeriod = T, l.period
	case !cong && m.Capacity > 0 && T > m.Capacity:
		m.Capacity, m.CapacityPeriod = 0, 0 // carried more than its "capacity"
	}
	if l.changed && l.stay < l.cfg.CoolDownPeriods {
		return hold(RuleHold, fmt.Sprintf("cool-down %d/%d after a change (%s, congestion %.2f)",
			l.stay, l.cfg.CoolDownPeriods, fmtRate(T), C))
	}
	target, rule, because := l.decide(obs, cong, C, T)
	l.level = target
	notes = append(notes, because)
	return Decision{Level: target, Channels: l.lm.Channels(target), Prev: n, Rule: rule, Reason: strings.Join(notes, "; ")}
}

// decide applies P5, P1 and P2 at level L to the window's congestion index
// c and throughput t, after the memory was updated.
func (l *Levels) decide(L int, cong bool, c, t float64) (int, Rule, string) {
	thr := l.cfg.CongestionThreshold
	if cong {
		if L > l.lo {
			below := l.mem[L-1]
			if below.Capacity > 0 && l.period-below.CapacityPeriod <= int64(l.cfg.MemoryPeriods) && !l.gain(L-1, L, below.Capacity, t) {
				return L - 1, RuleP5, fmt.Sprintf("P5 congested at levels %d and %d, %s -> %s is no gain: bottleneck outside the region",
					L-1, L, fmtRate(below.Capacity), fmtRate(t))
			}
		}
		if L == l.hi {
			return L, RuleHold, fmt.Sprintf("P1 congested (%.2f > %.2g) at the top level %d", c, thr, L)
		}
		if above := l.mem[L+1]; above.Capacity > 0 && !l.gain(L, L+1, t, above.Capacity) {
			return L, RuleHold, fmt.Sprintf("P1 congested (%.2f > %.2g) but level %d gave no gain (%s -> %s)",
				c, thr, L+1, fmtRate(t), fmtRate(above.Capacity))
		}
		return L + 1, RuleP1, fmt.Sprintf("P1 congested (%.2f > %.2g)", c, thr)
	}
	if L == l.lo {
		return L, RuleHold, fmt.Sprintf("P2 not congested (%.2f <= %.2g) at the lowest level", c, thr)
	}
	if d := l.cfg.ScaleDownPeriods; l.calm < d {
		return L, RuleHold, fmt.Sprintf("P2 not congested (%.2f <= %.2g) for %d/%d periods", c, thr, l.calm, d)
	}
	peak := l.recent.max()
	target := L
	why := ""
	for j := L - 1; j >= l.lo; j-- {
		capj, from := l.capacity(j)
		if capj == 0 {
			if j == L-1 {
				target, why = j, fmt.Sprintf("level %d unmeasured: probe it", j)
			}
			break
		}
		if capj*(1-thr) < peak {
			if j == L-1 {
				why = fmt.Sprintf("but level %d (%s%s) cannot carry the peak %s", j, fmtRate(capj), from, fmtRate(peak))
			}
			break
		}
		target, why = j, fmt.Sprintf("level %d (%s%s) carries the peak %s", j, fmtRate(capj), from, fmtRate(peak))
	}
	if target == L {
		return L, RuleHold, fmt.Sprintf("P2 not congested (%.2f <= %.2g) for %d periods %s", c, thr, l.calm, why)
	}
	return target, RuleP2, fmt.Sprintf("P2 not congested (%.2f <= %.2g) for %d periods: %s", c, thr, l.calm, why)
}

// capacity is level j's capacity in records/s: measured, or else the
// nearest measured level above scaled by the channel ratio; 0 when neither
// is known. from says which ("" when measured).
func (l *Levels) capacity(j int) (float64, string) {
	if c := l.mem[j].Capacity; c > 0 {
		return c, ""
	}
	for i := j + 1; i <= l.hi; i++ {
		if c := l.mem[i].Capacity; c > 0 {
			return c * float64(l.lm.Channels(j)) / float64(l.lm.Channels(i)), fmt.Sprintf(" scaled from level %d", i)
		}
	}
	return 0, ""
}

// gain reports whether going from level lo (throughput tlo) to level hi
// (throughput thi) pays: a rise of at least MinGain times the channels
// added times the throughput per channel measured at lo.
func (l *Levels) gain(lo, hi int, tlo, thi float64) bool {
	nlo, nhi := l.lm.Channels(lo), l.lm.Channels(hi)
	return thi-tlo >= l.cfg.MinGain*tlo/float64(nlo)*float64(nhi-nlo)
}

// forget resets levels from..to (inclusive, clipped) to unknown (P3).
func (l *Levels) forget(from, to int) {
	for i := max(from, 0); i <= min(to, l.hi); i++ {
		l.mem[i] = LevelState{}
	}
}

func congWord(c bool) string {
	if c {
		return "congested"
	}
	return "not congested"
}

// fmtRate formats a rate in records/s compactly: 950, 12.3k, 1.2M.
func fmtRate(r float64) string {
	switch {
	case math.IsInf(r, 1):
		return "inf"
	case r >= 999.5e6:
		return fmt.Sprintf("%.3gG", r/1e9)
	case r >= 999.5e3:
		return fmt.Sprintf("%.3gM", r/1e6)
	case r >= 999.5:
		return fmt.Sprintf("%.3gk", r/1e3)
	}
	return fmt.Sprintf("%.3g", r)
}
