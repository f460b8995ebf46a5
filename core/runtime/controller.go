package runtime

import (
	"fmt"
	"time"

	"streamd/elastic"
)

// The job's own controller: region.elastic's level controller or DS2
// (Controller, a Policy), or a schedule (Region.Schedule,
// region.elastic.random_every), run as a Policy by the goroutine that
// routes. It takes its snapshot there, between two source batches (at a
// block start with source workers), once its period has passed — where
// the source's lag may be read and a change lands at once — and carries
// its actions out as control requests served right away (control.go), as
// the HTTP API's scale is.

// Controller runs an elastic controller (elastic.Policy: the level
// controller or DS2, with or without elastic.DryRun) as a Policy: each
// whole period (Metrics.Whole) it steps the controller with
// Metrics.Region and asks for a scale when the decision changes the
// channel count and is not a dry run; periods that are not whole it skips,
// as the controllers' window rule asks (elastic package doc). Its
// decisions are reported (Reporter). Not safe for concurrent use.
type Controller struct {
	p    elastic.Policy
	last elastic.Decision
	ok   bool
}

// NewController wraps p.
func NewController(p elastic.Policy) *Controller { return &Controller{p: p} }

// Name is the controller's name ("levels", "ds2").
func (c *Controller) Name() string { return c.p.Name() }

// Step implements Policy.
func (c *Controller) Step(m Metrics) []Action {
	c.ok = false
	if !m.Whole {
		return nil
	}
	p := m.Region
	d := c.p.Step(p)
	c.last, c.ok = d, true
	if !d.Changed() || d.DryRun {
		return nil
	}
	return []Action{{Kind: KindScale, Channels: d.Channels, Reason: string(d.Rule),
		Inputs: map[string]string{"congestion": fmt.Sprintf("%.3f", p.Congestion()), "throughput": fmt.Sprintf("%.0f", p.Throughput()),
			"arrival": fmt.Sprintf("%.0f", p.ArrivalRate()), "level": fmt.Sprint(d.Level), "why": d.Reason}}}
}

// Decided implements Reporter: the last whole period's decision.
func (c *Controller) Decided() (Decision, bool) {
	d := c.last
	return Decision{Level: d.Level, Rule: string(d.Rule), Channels: d.Channels, DryRun: d.DryRun, Text: d.String()}, c.ok
}

// schedule is Region.Schedule as a Policy, stepped after every source
// batch: it asks f about every batch read since its last step (one with
// the single source stage; with source workers, which step at block
// starts, all of them, in order) and scales to its last nonzero answer.
type schedule struct {
	f       func(batch int64) int
	batches int64
}

func (s *schedule) Name() string { return "schedule" }

func (s *schedule) Step(m Metrics) []Action {
	n := 0
	for s.batches < m.Batches {
		s.batches++
		if c := s.f(s.batches); c > 0 {
			n = c
		}
	}
	if n == 0 || n == m.Channels {
		return nil
	}
	return []Action{{Kind: KindScale, Channels: n, Reason: fmt.Sprintf("batch %d", s.batches), Inputs: map[string]string{}}}
}

// stepper runs the job's own controller on the goroutine that routes.
type stepper struct {
	p Policy
	// period between steps; 0: at every call (a schedule).
	period      time.Duration
	meter       meter
	sample      sample
	start, last time.Time
	// pending is the reply of a scale it asked for that has not been
	// served yet: no step until it is.
	pending chan ctlReply
	// now is the clock (Elastic.Now; nil: wall time).
	now func() time.Time
}

// newStepper makes the region's own controller, if it has one.
func newStepper(reg *Region) (*stepper, error) {
	switch {
	case reg.Schedule != nil:
		return &stepper{p: &schedule{f: reg.Schedule}}, nil
	case reg.Elastic != nil && reg.Elastic.Policy != "" && reg.Elastic.Policy != "off":
		cfg := reg.Elastic.Config
		if cfg.InitialChannels == 0 {
			cfg.InitialChannels = reg.Channels
		}
		p, err := elastic.New(reg.Elastic.Policy, cfg)
		if err != nil {
			return nil, err
		}
		if reg.Elastic.DryRun {
			p = elastic.NewDryRun(p)
		}
		s := &stepper{p: NewController(p), period: time.Duration(cfg.PeriodNs), now: reg.Elastic.Now}
		if s.period <= 0 {
			s.period = time.Second
		}
		return s, nil
	}
	return nil, nil
}

// next is called by the goroutine that routes after each source batch
// (single source stage, lag true) or at each block start (source workers,
// x.mu held). Once a period has passed since the last step it takes a
// snapshot, steps the policy and queues its actions as control requests;
// it returns whether it queued one, which the caller serves right away
// (serveControl, placeControl).
func (s *stepper) next(r *run, lag bool) bool {
	now := time.Now()
	if s.now != nil {
		now = s.now()
	}
	if s.start.IsZero() {
		r.timeline.begin(now)
	}
	m, acts, stepped := s.decide(now, func(smp *sample) *sample { return r.read(smp, now, lag) }, r)
	if !stepped {
		return false
	}
	d, reported := r.account("elastic", s.p, m, acts, now.Sub(s.start))
	if reported {
		r.timeline.period(now, m, d, scales(acts))
	}
	queued := false
	for _, a := range acts {
		reason := fmt.Sprintf("elastic %s: %s", s.p.Name(), a.Reason)
		if a.Kind != KindScale {
			r.ctl.record(Reconfiguration{Kind: a.Kind, Reason: reason, Position: -1,
				Err: refused("the job's own controller changes the channel count only, not %q", a.Kind).Error()})
			continue
		}
		q := &ctlRequest{kind: KindScale, channels: a.Channels, reason: reason, inputs: inputsOf(a, m), own: reported, reply: make(chan ctlReply, 1)}
		if _, err := (Live{r}).check(q); err != nil {
			continue
		}
		r.ctl.enqueue(q)
		s.pending, queued = q.reply, true
	}
	return queued
}

// decide is next's deterministic part: at now, whether a period has
// passed (the first call takes the baseline, and steps only a policy
// without a period: a schedule), the snapshot (read fills a sample), and
// the policy's step — none while pause-controller holds it or while a
// change it asked for is still queued. stepped says whether Step was
// called; m is the meter's (reused). r gives the range of channel counts
// (nil in tests).
func (s *stepper) decide(now time.Time, read func(*sample) *sample, r *run) (m *Metrics, acts []Action, stepped bool) {
	if s.start.IsZero() {
		s.start, s.last = now, now
	} else if now.Sub(s.last) < s.period {
		return nil, nil, false
	}
	s.last = now
	m, ok := s.meter.observe(read(&s.sample), r)
	if !ok && s.period > 0 {
		return m, nil, false
	}
	if s.pending != nil {
		select {
		case <-s.pending:
			s.pending = nil
		default: // still queued behind another request
			m.Whole, m.Settled, s.meter.settled = false, 0, 0
			return m, nil, false
		}
	}
	if s.sample.paused {
		return m, nil, false
	}
	return m, s.p.Step(*m), true
}
