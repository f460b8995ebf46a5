package runtime

import (
	"context"
	"fmt"
	"time"
)

// Control policies (docs/CONTROL.md, "Policies"): a Policy sees a Metrics
// snapshot once per period and returns the reconfigurations it wants —
// the same ones the HTTP API issues. Policy.Step is meant to be a pure
// function of the snapshots it was given (no clock, no goroutines), so a
// policy is tested with scripted snapshots; RunPolicy is the edge that
// reads the live job and carries the actions out through Live.

// Metrics is one period of a running job, as a policy sees it.
type Metrics struct {
	// Period is the time the figures cover.
	Period time.Duration
	// Channels now, and the range Scale accepts.
	Channels, MinChannels, MaxChannels int
	// Records each channel processed in the period, and Skew: the
	// largest over the mean (1 when balanced or idle).
	Records []int64
	Skew    float64
	// Throughput is records processed per second in the period; Arrival
	// the records read from the source per second.
	Throughput, Arrival float64
	// Congestion is the fraction of the period the splitter was blocked
	// on full channel rings, in [0, 1] (Gedik et al. 2014, §4.1).
	Congestion float64
	// LatencyP99 is the 99th percentile end-to-end latency of the
	// period (from RunPolicy's latency source; 0 when there is none).
	LatencyP99 time.Duration
}

// Action is one reconfiguration a policy asks for.
type Action struct {
	// Kind is KindScale or KindRebalance.
	Kind string
	// Channels is a scale's channel count; Target a rebalance's skew
	// (≤ 1: the job's default).
	Channels int
	Target   float64
	// Reason is logged with the reconfiguration.
	Reason string
}

// Policy decides reconfigurations from each period's metrics.
type Policy interface {
	// Name names the policy in the reconfiguration log.
	Name() string
	// Step is given the metrics of one period and returns the actions to
	// carry out now (none: nil).
	Step(m Metrics) []Action
}

// RunPolicy drives p against the running job every period until ctx is
// done or the job ends: it takes a Metrics snapshot (latency, if set, is
// asked for the period's p99), calls Step and carries out its actions
// through Live.Scale and Live.RebalanceNow, logged with reason "policy
// NAME: …". A refused action is logged and the policy goes on. It returns
// the number of actions carried out.
func RunPolicy(ctx context.Context, l Live, p Policy, period time.Duration, latency func() time.Duration) int {
	r := l.r
	tick := time.NewTicker(period)
	defer tick.Stop()
	prev, prevIn, prevBlocked, last := l.channelRecords(), r.recordsIn.Load(), l.blockedTotal(), time.Now()
	done := 0
	for {
		select {
		case <-ctx.Done():
			return done
		case <-r.ctx.Done():
			return done
		case now := <-tick.C:
			cur, in, blocked := l.channelRecords(), r.recordsIn.Load(), l.blockedTotal()
			m := Metrics{Period: now.Sub(last), Channels: l.Channels(), MinChannels: 1, MaxChannels: r.maxChannels}
			if e := r.job.Region; e != nil && e.Elastic != nil && e.Elastic.Config.MinChannels > 1 {
				m.MinChannels = e.Elastic.Config.MinChannels
			}
			var sum, top int64
			for c, v := range cur {
				d := v
				if c < len(prev) {
					d -= prev[c]
				}
				m.Records = append(m.Records, d)
				sum += d
				top = max(top, d)
			}
			m.Skew = 1
			if sum > 0 {
				m.Skew = float64(top) * float64(len(cur)) / float64(sum)
			}
			if s := m.Period.Seconds(); s > 0 {
				m.Throughput, m.Arrival = float64(sum)/s, float64(in-prevIn)/s
				m.Congestion = min(1, max(0, float64(blocked-prevBlocked)/float64(m.Period)))
			}
			if latency != nil {
				m.LatencyP99 = latency()
			}
			prev, prevIn, prevBlocked, last = cur, in, blocked, now
			for _, a := range p.Step(m) {
				reason := fmt.Sprintf("policy %s: %s", p.Name(), a.Reason)
				var err error
				switch a.Kind {
				case KindScale:
					_, err = l.Scale(ctx, a.Channels, reason, map[string]string{"latency_p99": m.LatencyP99.String(), "skew": fmt.Sprintf("%.3f", m.Skew)})
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

// channelRecords is each channel's records processed so far.
func (l Live) channelRecords() []int64 {
	n := l.Channels()
	out := make([]int64, n)
	for c := range n {
		out[c] = l.r.chanStats[c].Records.Load()
	}
	return out
}

// blockedTotal is the splitters' blocked time over the channels now, ns.
func (l Live) blockedTotal() int64 {
	var ns int64
	for c := range l.Channels() {
		ns += l.r.blockedNs(c)
	}
	return ns
}
