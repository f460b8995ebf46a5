// Package control is an example control policy on streamd's policy API
// (core/runtime.Policy, docs/CONTROL.md): scale up one channel when the
// p99 end-to-end latency passes a bound, rebalance when the channels'
// skew passes a target. It is a pure function of the metrics it is
// given; runtime.RunPolicy runs it against a live job.
package control

import (
	"fmt"
	"time"

	"streamd/core/runtime"
)

// Latency is the latency-aware policy.
type Latency struct {
	// Bound is the p99 end-to-end latency above which it adds a channel.
	Bound time.Duration
	// Skew is the max/mean channel load above which it rebalances.
	Skew float64
	// Cooldown is how many periods it waits after an action.
	Cooldown int

	wait int
}

// Name implements runtime.Policy.
func (p *Latency) Name() string { return "latency" }

// Step implements runtime.Policy: at most one action per period, then
// Cooldown periods of none, so that a change shows in the figures first.
func (p *Latency) Step(m runtime.Metrics) []runtime.Action {
	if p.wait > 0 {
		p.wait--
		return nil
	}
	var a runtime.Action
	switch {
	case m.LatencyP99 > p.Bound && m.Channels < m.MaxChannels:
		a = runtime.Action{Kind: runtime.KindScale, Channels: m.Channels + 1,
			Reason: fmt.Sprintf("p99 latency %s > bound %s", m.LatencyP99, p.Bound)}
	case m.Skew > p.Skew && m.Channels > 1:
		a = runtime.Action{Kind: runtime.KindRebalance, Target: p.Skew,
			Reason: fmt.Sprintf("skew %.2f > target %.2f", m.Skew, p.Skew)}
	default:
		return nil
	}
	p.wait = p.Cooldown
	return []runtime.Action{a}
}
