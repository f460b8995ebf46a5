package elastic

import (
	"errors"
	"fmt"
)

// Rule names what produced a [Decision].
type Rule string

// The rules. P1, P2, P5 and P6 are the principles of [TPDS14 §4]; P3 and P4
// (load-change detection and its sensitivity) never move the level by
// themselves and appear in reasons only.
const (
	RuleP1     Rule = "P1"     // congested: one level up
	RuleP2     Rule = "P2"     // not congested: one level down
	RuleP5     Rule = "P5"     // congested here and one level down without a gain: one level down
	RuleP6     Rule = "P6"     // the channel count is off the level map or outside the limits: snap to it
	RuleDS2    Rule = "ds2"    // DS2 computed a new channel count
	RuleHold   Rule = "hold"   // no change; the reason says which rule held
	RuleWarmUp Rule = "warmup" // DS2 ignored a warm-up period after a change
	RuleOff    Rule = "off"    // the off policy
	RuleSkip   Rule = "skip"   // the period's metrics were unusable; no change
)

// Decision is a policy's answer for one period.
type Decision struct {
	// Level is the level the region should run at next, or -1 for policies
	// without levels (ds2, off).
	Level int
	// Channels is the channel count the region should run with next.
	Channels int
	// Prev is the channel count the period was measured with
	// (len(Period.Channels)).
	Prev int
	// Rule is what produced the decision.
	Rule Rule
	// Reason says why, with the numbers, for the runtime's log.
	Reason string
	// DryRun marks a decision that must not be carried out, only logged
	// (see [DryRun]).
	DryRun bool
}

// Changed reports whether carrying out d changes the channel count.
func (d Decision) Changed() bool { return d.Channels != d.Prev }

// String formats d as "level 3 channels 4 rule P1: reason".
func (d Decision) String() string {
	lvl := "-"
	if d.Level >= 0 {
		lvl = fmt.Sprint(d.Level)
	}
	s := fmt.Sprintf("level %s channels %d rule %s", lvl, d.Channels, d.Rule)
	if d.DryRun {
		s += " (dry run)"
	}
	if d.Reason != "" {
		s += ": " + d.Reason
	}
	return s
}

// Policy decides the channel count of one parallel region, period by
// period. Implementations are deterministic and not safe for concurrent use
// (see the package invariants).
type Policy interface {
	// Step takes the metrics of the period that just ended and returns the
	// channel count for the next one. It does not keep p.Channels.
	Step(p Period) Decision
	// Channels is the channel count of the policy's last decision (before
	// the first Step: the initial count the region should start with).
	Channels() int
	// Name is the policy's name as given to [New].
	Name() string
}

// ErrUnknownPolicy is wrapped by [New] for a name it does not know.
var ErrUnknownPolicy = errors.New("elastic: unknown policy")

// Policy names accepted by [New]. The empty name means PolicyLevels.
const (
	PolicyLevels = "levels"
	PolicyDS2    = "ds2"
	PolicyOff    = "off"
)

// New returns the policy called name ("levels", "ds2" or "off"; "" means
// "levels") configured by cfg. It returns an error wrapping
// [ErrUnknownPolicy] for another name and the errors of [Config.Validate]
// for a bad config.
func New(name string, cfg Config) (Policy, error) {
	switch name {
	case "", PolicyLevels, PolicyDS2, PolicyOff:
	default:
		return nil, fmt.Errorf("%w %q: want %q, %q or %q", ErrUnknownPolicy, name, PolicyLevels, PolicyDS2, PolicyOff)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("policy %s: %w", name, err)
	}
	switch name {
	case PolicyDS2:
		return newDS2(cfg), nil
	case PolicyOff:
		return newOff(cfg), nil
	}
	return newLevels(cfg), nil
}

// Off is the policy that never changes the channel count: every decision
// keeps the count the period was measured with (moved into [Config.MinChannels,
// limit] should it lie outside, like every policy's decisions). Create it
// with [New].
type Off struct {
	channels int
	lo, hi   int
}

func newOff(cfg Config) *Off {
	lo, hi := cfg.MinChannels, cfg.Limit()
	return &Off{channels: min(max(cfg.initial(), lo), hi), lo: lo, hi: hi}
}

// Step returns a decision that keeps len(p.Channels) channels.
func (o *Off) Step(p Period) Decision {
	if n := len(p.Channels); n > 0 {
		o.channels = min(max(n, o.lo), o.hi)
	}
	return Decision{Level: -1, Channels: o.channels, Prev: len(p.Channels), Rule: RuleOff, Reason: "elasticity off"}
}

// Channels is the last measured channel count (initially the configured
// initial count).
func (o *Off) Channels() int { return o.channels }

// Name returns "off".
func (o *Off) Name() string { return PolicyOff }

// DryRun wraps a policy so that its decisions are computed and reported but
// marked [Decision.DryRun]: the runtime logs them and keeps the channel
// count. The wrapped policy sees the unchanged channel count in every
// following period and resynchronises to it (package invariants), so each
// decision answers "what would you do from where the region really is".
type DryRun struct {
	inner    Policy
	channels int
}

// NewDryRun wraps p.
func NewDryRun(p Policy) *DryRun { return &DryRun{inner: p, channels: p.Channels()} }

// Step calls the wrapped policy's Step and marks the decision as a dry run.
func (d *DryRun) Step(p Period) Decision {
	if n := len(p.Channels); n > 0 {
		d.channels = n
	}
	dec := d.inner.Step(p)
	dec.DryRun = true
	return dec
}

// Channels is the channel count the region really runs with: the last
// measured count (initially the wrapped policy's initial count).
func (d *DryRun) Channels() int { return d.channels }

// Name is the wrapped policy's name.
func (d *DryRun) Name() string { return d.inner.Name() }

// Unwrap returns the wrapped policy.
func (d *DryRun) Unwrap() Policy { return d.inner }
