package elastic

import (
	"fmt"
	"math"
	"strings"
)

// LevelState is what the level controller remembers about one level
// [TPDS14 §4]. A level the controller has not visited since it last forgot
// it is unknown: it counts as congested with unbounded throughput, so that
// P1 never refuses to climb into it, and P2 and P5 (which need facts about
// the level below) ignore it.
type LevelState struct {
	// Known is set once the level is visited and cleared when a detected
	// load change forgets it (P3).
	Known bool
	// LastPeriod is the number of the last period observed at this level
	// (periods are numbered from 1), 0 when unknown.
	LastPeriod int64
	// Congested is whether that period was congested.
	Congested bool
	// Throughput is that period's throughput, in records/s (+Inf unknown).
	Throughput float64
	// FirstThroughput is the throughput of the first period of the latest
	// stay at this level, in records/s (+Inf unknown).
	FirstThroughput float64
}

func unknownLevel() LevelState {
	return LevelState{Congested: true, Throughput: math.Inf(1), FirstThroughput: math.Inf(1)}
}

// Levels is the elastic level controller of [TPDS14 §4]. Create it with
// [New] ("levels").
//
// The region runs at a level L in [lo, L*]; N(L) channels (P6, [LevelMap]).
// Each period the controller observes whether the region is congested
// (congestion index > CongestionThreshold) and its throughput, and:
//
//   - detects load changes (P3) at the current level, with a sensitivity of
//     α × the ideal throughput of one channel (P4): an increase when the level
//     turns congested (it was not at the last visit, or earlier in this stay)
//     or the throughput rises by more than α·T₀/N(L) over T₀, the throughput
//     of the first period of the current stay; a decrease when, not
//     congested, the level was congested before or the throughput falls by
//     more than α·T₀/N(L). An increase forgets everything known about the
//     levels above, a decrease everything known about the levels below.
//   - decides, in this order:
//     P5: congested at L, level L−1 known congested, and L's throughput beats
//     L−1's by less than α × the ideal gain (α·T(L−1)/N(L−1)·(N(L)−N(L−1))):
//     the bottleneck is outside the region; go down to L−1.
//     P1: congested: go up to L+1, unless L = L* or L+1 is known to be
//     congested with no such gain over L.
//     P2: not congested: go down to L−1, unless L is the lowest level or
//     L−1 is known to be congested.
//
// Deviations from [TPDS14], each deliberate:
//
//   - A decrease must be seen in Config.ScaleDownPeriods consecutive periods
//     before it is acted on (1 reproduces the paper). Increases act at once.
//     This keeps a load that oscillates faster than that window from moving
//     the region down and up every cycle.
//   - A decrease does not forget a lower level known to be congested at a
//     throughput no higher than the current one: congested, that level
//     delivered its capacity, so it could not carry even the lower load, and
//     probing it would cost two reconfigurations for nothing. (The paper
//     forgets all levels below.)
//   - Throughput falls are taken as load decreases only in periods that are
//     not congested; a congested region whose throughput falls has lost
//     capacity, not load, and must keep what it knows about the level below
//     for P5.
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

	prevObs   int     // level observed in the previous period; -1 none
	refT      float64 // throughput reference of the current stay, records/s
	refCong   bool    // congestion reference of the current stay
	decStreak int     // consecutive periods with a decrease seen
}

func newLevels(cfg Config) *Levels {
	lm := cfg.Map()
	l := &Levels{
		cfg:     cfg,
		lm:      lm,
		lo:      lm.Level(cfg.MinChannels),
		hi:      lm.MaxLevel(cfg.Limit()),
		prevObs: -1,
	}
	l.level = min(max(lm.Level(cfg.initial()), l.lo), l.hi)
	l.mem = make([]LevelState, l.hi+1)
	for i := range l.mem {
		l.mem[i] = unknownLevel()
	}
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

	c := p.Congestion()
	cong := c > l.cfg.CongestionThreshold
	t := p.Throughput()
	alpha := l.cfg.Sensitivity
	m := &l.mem[obs]

	// P3, P4: load-change detection at the current level.
	newStay := l.prevObs != obs
	if newStay {
		l.decStreak = 0
		l.refT, l.refCong = t, cong
		if m.Known {
			l.refCong = m.Congested
		}
	}
	slack := alpha * l.refT / float64(l.lm.Channels(obs))
	inc := (cong && !l.refCong) || t > l.refT+slack
	dec := !cong && (l.refCong || t < l.refT-slack)
	why := fmt.Sprintf("throughput %s vs %s", fmtRate(t), fmtRate(l.refT))
	if cong != l.refCong {
		why = "now " + congWord(cong)
	}
	switch {
	case inc:
		l.forget(obs+1, l.hi)
		notes = append(notes, fmt.Sprintf("P3 load increase (%s): forget levels above", why))
		l.refT, l.refCong, l.decStreak = t, cong, 0
	case dec:
		l.decStreak++
		if l.decStreak < l.cfg.ScaleDownPeriods {
			notes = append(notes, fmt.Sprintf("P3 load decrease (%s) seen %d/%d", why, l.decStreak, l.cfg.ScaleDownPeriods))
			break
		}
		kept := l.forgetBelow(obs, t)
		notes = append(notes, fmt.Sprintf("P3 load decrease (%s): forget levels below%s", why, kept))
		l.refT, l.refCong, l.decStreak = t, cong, 0
	default:
		l.decStreak = 0
	}

	m.Known, m.LastPeriod, m.Congested, m.Throughput = true, l.period, cong, t
	if newStay {
		m.FirstThroughput = t
	}
	l.prevObs = obs

	target, rule, because := l.decide(obs, cong, c, t)
	l.level = target
	notes = append(notes, because)
	return Decision{Level: target, Channels: l.lm.Channels(target), Prev: n, Rule: rule, Reason: strings.Join(notes, "; ")}
}

// decide applies P5, P1 and P2 at level L after the memory was updated.
func (l *Levels) decide(L int, cong bool, c, t float64) (int, Rule, string) {
	thr := l.cfg.CongestionThreshold
	if cong {
		if L > l.lo {
			below := l.mem[L-1]
			if below.Known && below.Congested && !l.gain(L-1, L, below.Throughput, t) {
				return L - 1, RuleP5, fmt.Sprintf("P5 congested at levels %d and %d, %s -> %s is no gain: bottleneck outside the region",
					L-1, L, fmtRate(below.Throughput), fmtRate(t))
			}
		}
		if L == l.hi {
			return L, RuleHold, fmt.Sprintf("P1 congested (%.2f > %.2g) at the top level %d", c, thr, L)
		}
		above := l.mem[L+1]
		if above.Known && above.Congested && !l.gain(L, L+1, t, above.Throughput) {
			return L, RuleHold, fmt.Sprintf("P1 congested (%.2f > %.2g) but level %d gave no gain (%s -> %s)",
				c, thr, L+1, fmtRate(t), fmtRate(above.Throughput))
		}
		return L + 1, RuleP1, fmt.Sprintf("P1 congested (%.2f > %.2g)", c, thr)
	}
	if L == l.lo {
		return L, RuleHold, fmt.Sprintf("P2 not congested (%.2f <= %.2g) at the lowest level", c, thr)
	}
	if below := l.mem[L-1]; below.Known && below.Congested {
		return L, RuleHold, fmt.Sprintf("P2 not congested (%.2f <= %.2g) but level %d was congested", c, thr, L-1)
	}
	return L - 1, RuleP2, fmt.Sprintf("P2 not congested (%.2f <= %.2g)", c, thr)
}

// gain reports whether going from level lo (throughput tlo) to level hi
// (throughput thi) gained at least α times the ideal gain: the per-channel
// throughput at lo times the channels added [TPDS14 §4, P4, P5].
func (l *Levels) gain(lo, hi int, tlo, thi float64) bool {
	nlo, nhi := l.lm.Channels(lo), l.lm.Channels(hi)
	ideal := tlo / float64(nlo) * float64(nhi-nlo)
	return thi-tlo >= l.cfg.Sensitivity*ideal
}

// forgetBelow forgets the levels below L after a load decrease to
// throughput t (P3), except those known to be congested at a throughput of
// at most t: congested, a level delivers its capacity, so they could not
// carry even the lower load and a probe would only come back. It returns a
// note naming the kept levels.
func (l *Levels) forgetBelow(L int, t float64) string {
	var kept []string
	for j := 0; j < L; j++ {
		m := l.mem[j]
		if m.Known && m.Congested && m.Throughput <= t {
			kept = append(kept, fmt.Sprint(j))
			continue
		}
		l.mem[j] = unknownLevel()
	}
	if len(kept) == 0 {
		return ""
	}
	return " but " + strings.Join(kept, ", ") + " (congested below that)"
}

// forget resets levels from..to (inclusive, clipped) to unknown (P3).
func (l *Levels) forget(from, to int) {
	for i := max(from, 0); i <= min(to, l.hi); i++ {
		l.mem[i] = unknownLevel()
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
