package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"streamd/core"
	"streamd/core/runtime/handoff"
	"streamd/core/runtime/internal/change"
	"streamd/kvstate"
	"streamd/kvstate/balance"
)

// Load balancing at the same channel count (docs/ARCHITECTURE.md,
// "Rebalancing"). Channels count records per key group in arrays only
// they write (groupLoad); the balancer, on the source stage (or on the
// source worker that starts a block, under the exchange's lock), asks
// for a copy once per period, plans a new key-group table with
// kvstate/balance, and carries it out in steps: each step is a live
// change at the same channel count (prepare → sync → update) whose
// Reconfig marker only the channels that lose or gain key groups pause
// at.

// RebalancePlan is what a rebalance decided (Live.Rebalance, the report).
type RebalancePlan struct {
	// Loads are records per channel in the period measured, each key
	// group's at its owner in the table the plan starts from (a group a
	// step moved during the period counts at its new owner, so that
	// Before and After compare the same loads); Planned the same after the
	// moves, as planned.
	Loads   []uint64 `json:"loads"`
	Planned []uint64 `json:"planned"`
	// Before, After and Target are skews (max / mean): of Loads, planned,
	// aimed at (raised to the heaviest key group's share when one group is
	// heavier than the target allows).
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	Target float64 `json:"target"`
	Groups int     `json:"groups"` // key groups to move
	Bytes  int64   `json:"bytes"`  // their state bytes (operators' estimates: core.StateSizer)
	Steps  int     `json:"steps"`  // live changes it takes
}

// ErrNoRebalance: the region cannot be rebalanced (stateless, or no
// keyed region). A job that ends before a request is served answers
// ErrEnded.
var ErrNoRebalance = errors.New("no keyed region to rebalance")

// groupLoad is one channel stage's count of records per key group. The
// channel's goroutine alone writes counts (no atomics per record) and,
// when it sees a new request (req ahead of what it served: one atomic
// load per batch), copies counts and its groups' state bytes to pub and
// stores served; a reader reads pub only while served == req, and then
// bumps req. So pub is written only after a request and read only after
// its answer: happens-before through req and served, no lock.
type groupLoad struct {
	counts []uint64
	shift  uint // hash >> shift is the key group (kvstate.KeyGroup)
	owned  []bool
	done   uint64 // the last request served (channel only)
	pub    []uint64
	bytes  []int64
	req    atomic.Uint64
	served atomic.Uint64
}

func newGroupLoad(groups int, table *kvstate.Table, c int) *groupLoad {
	gl := &groupLoad{counts: make([]uint64, groups), pub: make([]uint64, groups), bytes: make([]int64, groups), owned: make([]bool, groups)}
	gl.shift = uint(64 - bits(groups))
	if table != nil {
		for g := range groups {
			gl.owned[g] = table.Owner(g) == c
		}
	}
	return gl
}

func bits(groups int) int {
	n := 0
	for groups > 1 {
		groups >>= 1
		n++
	}
	return n
}

// count adds a data batch's records to their key groups (channel only).
func (gl *groupLoad) count(b *core.Batch) {
	counts, shift := gl.counts, gl.shift
	for _, h := range b.Hash[:b.Len] {
		counts[h>>shift]++
	}
}

// serve answers a pending request (channel only, between batches).
func (gl *groupLoad) serve(insts []instance) {
	r := gl.req.Load()
	if r == gl.done {
		return
	}
	copy(gl.pub, gl.counts)
	clear(gl.bytes)
	for _, in := range insts {
		if sz, ok := in.op.(core.StateSizer); ok {
			for g, own := range gl.owned {
				if own {
					gl.bytes[g] += sz.GroupBytes(g)
				}
			}
		}
	}
	gl.done = r
	gl.served.Store(r)
}

// moved notes the key groups channel c lost and gained at a reconf.
func (gl *groupLoad) moved(lost []handoff.Loss, gained []int) {
	for _, l := range lost {
		for _, g := range l.Groups {
			gl.owned[g] = false
		}
	}
	for _, g := range gained {
		gl.owned[g] = true
	}
}

// balancer plans and carries out rebalances. Everything but requests is
// owned by the goroutine that routes (the source stage, or a source worker
// under the exchange's lock).
type balancer struct {
	cfg      Rebalance
	log      *slog.Logger
	period   time.Duration
	maxPause float64 // ns
	cost     balance.Cost
	groups   int
	start    time.Time
	last     time.Time
	prev     map[*groupLoad][]uint64
	steps    [][]kvstate.Move
	// stepInfo is each queued step's row in the timeline: its state
	// bytes (-1: not known) and what it belongs to.
	stepInfo []stepInfo
	timeline *timeline
	rnd      *rand.Rand
	batches  int64
	// requests from Live.Rebalance; waiting ones are answered once loads
	// of a full period are in.
	requests chan rebalanceRequest
	waiting  []rebalanceRequest
	// ctl is the run's control plane: auto plans go to its log, and
	// pause-controller holds them.
	ctl *control

	mu      sync.Mutex // report figures, read by Live and the report
	plans   int64
	stepsN  int64
	moved   int64
	bytes   int64
	first   *RebalancePlan
	latest  []uint64 // records per channel, the last period measured
	lastSkw float64
}

type rebalanceRequest struct {
	target float64
	reason string // for the timeline ("": a plain Live.Rebalance)
	reply  chan RebalancePlan
}

type stepInfo struct {
	bytes  int64
	reason string
}

func newBalancer(cfg *Rebalance, groups int, log *slog.Logger) *balancer {
	b := &balancer{cfg: *cfg, groups: groups, log: log, period: cfg.Period, cost: cfg.Cost, maxPause: float64(cfg.MaxPause),
		prev: map[*groupLoad][]uint64{}, requests: make(chan rebalanceRequest, 16)}
	if b.period <= 0 {
		b.period = time.Second
	}
	if b.maxPause <= 0 {
		b.maxPause = float64(time.Millisecond)
	}
	if b.cost.GroupNs <= 0 || b.cost.BytesPerNs <= 0 {
		b.cost = balance.DefaultCost
	}
	if cfg.RandomEvery > 0 {
		b.rnd = rand.New(rand.NewPCG(cfg.Seed, 0xba1a))
	}
	return b
}

func (b *balancer) now() time.Time {
	if b.cfg.Now != nil {
		return b.cfg.Now()
	}
	return time.Now()
}

// next is asked between batches (single source stage) or at a block
// start (source workers, x.mu held) with the table now routed: it returns
// the table of the next step, or nil for none now.
func (b *balancer) next(r *run, cur *kvstate.Table) *kvstate.Table {
	if cur == nil || cur.Channels() < 2 {
		b.refuse()
		return nil
	}
	if b.rnd != nil {
		for total := r.batchesIn.Load(); b.batches < total; {
			b.batches++
			if b.batches%int64(b.cfg.RandomEvery) == 0 && len(b.steps) == 0 {
				b.steps = append(b.steps, b.randomStep(cur))
				b.stepInfo = append(b.stepInfo, stepInfo{bytes: -1, reason: fmt.Sprintf("random_every: batch %d", b.batches)})
			}
		}
	}
	for {
		select {
		case q := <-b.requests:
			b.waiting = append(b.waiting, q)
			continue
		default:
		}
		break
	}
	now := b.now()
	if b.start.IsZero() {
		b.start, b.last = now, now
	}
	if len(b.waiting) > 0 || (b.cfg.Auto && now.Sub(b.last) >= b.period && !r.ctl.paused.Load()) {
		if load, bytes, per, ok := b.poll(r); ok {
			b.last = now
			b.mu.Lock()
			b.latest, b.lastSkw = per, balance.Skew(per)
			b.mu.Unlock()
			b.decide(cur, load, bytes, per, now)
		}
	}
	if len(b.steps) == 0 {
		return nil
	}
	step, info := b.steps[0], b.stepInfo[0]
	b.steps, b.stepInfo = b.steps[1:], b.stepInfo[1:]
	next, err := cur.Reassign(step)
	if err != nil { // a plan made under another table: drop what is left
		b.steps, b.stepInfo = nil, nil
		return nil
	}
	b.timeline.step(now, cur.Channels(), len(step), info.bytes, info.reason)
	b.mu.Lock()
	b.stepsN++
	b.moved += int64(len(step))
	b.mu.Unlock()
	return next
}

// decide plans with a period's loads: for the waiting requests, and for
// the auto policy when no steps are left and the skew is over target.
func (b *balancer) decide(cur *kvstate.Table, load []uint64, bytes []int64, per []uint64, now time.Time) {
	owners := cur.Owners()
	for _, q := range b.waiting {
		reason := q.reason
		if reason == "" {
			reason = "request"
		}
		p := b.plan(owners, cur.Channels(), load, bytes, q.target, now, reason)
		q.reply <- p
		if p.Groups > 0 {
			owners = cur.Owners() // the steps queued are the newest plan's
		}
	}
	b.waiting = b.waiting[:0]
	if b.cfg.Auto && len(b.steps) == 0 && balance.Skew(per) > b.target(0) && (b.ctl == nil || !b.ctl.paused.Load()) {
		p := b.plan(owners, cur.Channels(), load, bytes, 0, now, "")
		if b.ctl != nil && p.Groups > 0 {
			b.ctl.record(Reconfiguration{At: now, Kind: KindRebalance, Position: -1, From: cur.Channels(), To: cur.Channels(),
				Reason: fmt.Sprintf("rebalancer: skew %.3f > target %.3f", p.Before, p.Target),
				Inputs: map[string]string{"loads": fmt.Sprint(per), "planned_skew": fmt.Sprintf("%.3f", p.After), "groups": fmt.Sprint(p.Groups),
					"bytes": fmt.Sprint(p.Bytes), "steps": fmt.Sprint(p.Steps)}})
		}
	}
}

func (b *balancer) target(t float64) float64 {
	if t > 1 {
		return t
	}
	if b.cfg.TargetSkew > 1 {
		return b.cfg.TargetSkew
	}
	return balance.DefaultTarget
}

// plan makes a plan and queues its steps (replacing any left); reason
// says who asked, for the timeline ("": the auto policy, whose plans of
// no moves get no row).
func (b *balancer) plan(owners []int, channels int, load []uint64, bytes []int64, target float64, now time.Time, reason string) RebalancePlan {
	p := balance.Rebalance(owners, channels, load, bytes, b.target(target))
	steps := balance.Steps(p.Moves, bytes, b.cost, b.maxPause)
	out := RebalancePlan{Loads: balance.ChannelLoads(owners, channels, load), Planned: p.Loads, Before: p.Before, After: p.After, Target: p.Target,
		Groups: len(p.Moves), Bytes: p.Bytes, Steps: len(steps)}
	if reason != "" || len(p.Moves) > 0 { // a request's, moves or not; the auto policy's when it moves something
		if reason == "" {
			reason = fmt.Sprintf("rebalancer: skew %.3f > target %.3f", out.Before, out.Target)
		}
		b.timeline.plan(now, channels, out, reason)
	}
	if len(p.Moves) == 0 {
		return out
	}
	b.steps, b.stepInfo = steps, b.stepInfo[:0]
	for k, st := range steps {
		var sum int64
		for _, m := range st {
			sum += bytes[m.Group]
		}
		b.stepInfo = append(b.stepInfo, stepInfo{bytes: sum, reason: fmt.Sprintf("step %d/%d: %s", k+1, len(steps), reason)})
	}
	b.mu.Lock()
	b.plans++
	b.bytes += p.Bytes
	if b.first == nil {
		b.first = &out
	}
	b.mu.Unlock()
	b.log.Info("rebalance", "t", now.Sub(b.start).Round(time.Millisecond), "loads", fmt.Sprint(out.Loads), "skew", fmt.Sprintf("%.3f", out.Before),
		"planned", fmt.Sprintf("%.3f", out.After), "target", fmt.Sprintf("%.3f", out.Target), "groups", out.Groups, "bytes", out.Bytes, "steps", out.Steps)
	return out
}

// poll collects the channels' published counts and asks for new ones. It
// returns each key group's records and state bytes since the last
// successful poll (since the channel started, for a channel polled for
// the first time), and each channel's records; ok only when every channel
// has answered a request (a channel that has not is asked and the poll
// tried again at the next call).
func (b *balancer) poll(r *run) (load []uint64, bytes []int64, per []uint64, ok bool) {
	n := int(r.curChans.Load())
	gls := make([]*groupLoad, n)
	ok = true
	for c := range n {
		gl := r.loads[c].Load()
		if gl == nil || gl.served.Load() != gl.req.Load() {
			return nil, nil, nil, false // not started yet, or busy with the last request
		}
		ok = ok && gl.req.Load() > 0
		gls[c] = gl
	}
	if !ok {
		for _, gl := range gls {
			if gl.req.Load() == 0 {
				gl.req.Store(1)
			}
		}
		return nil, nil, nil, false
	}
	load, bytes, per = make([]uint64, b.groups), make([]int64, b.groups), make([]uint64, n)
	for c, gl := range gls {
		prev := b.prev[gl]
		if prev == nil {
			prev = make([]uint64, b.groups)
			b.prev[gl] = prev
		}
		for g, v := range gl.pub {
			d := v - prev[g]
			load[g] += d
			per[c] += d
			bytes[g] += gl.bytes[g]
		}
		copy(prev, gl.pub)
		gl.req.Add(1)
	}
	for gl := range b.prev {
		if !slices.Contains(gls, gl) {
			delete(b.prev, gl) // a channel stage that ended
		}
	}
	return load, bytes, per, true
}

// randomStep moves 1 to 8 random key groups of cur to random other
// channels (RandomEvery).
func (b *balancer) randomStep(cur *kvstate.Table) []kvstate.Move {
	k := 1 + b.rnd.IntN(8)
	var ms []kvstate.Move
	for range k {
		g := b.rnd.IntN(cur.Groups())
		if slices.ContainsFunc(ms, func(m kvstate.Move) bool { return m.Group == g }) {
			continue
		}
		from := cur.Owner(g)
		to := (from + 1 + b.rnd.IntN(cur.Channels()-1)) % cur.Channels()
		ms = append(ms, kvstate.Move{Group: g, From: from, To: to})
	}
	return ms
}

// refuse answers every waiting request with a plan of nothing.
func (b *balancer) refuse() {
	for {
		select {
		case q := <-b.requests:
			q.reply <- RebalancePlan{Before: 1, After: 1}
		default:
			return
		}
	}
}

// rebalanceStep carries out one step on the single source stage (the
// change's source side, change.Source, without a drain): a Reconfig
// marker at the next sequence number to every channel, and the splitter
// routes under table from there on. There is no drain (it is for
// channel-count changes): a channel that gains key groups holds them and
// goes on (hold.go), or, when its operators cannot hold, waits at the
// marker for their old owner to reach it; the others pass it without
// waiting.
func (s *sourceStage) rebalanceStep(table *kvstate.Table) error {
	r, sp := s.r, s.sp
	n := len(sp.rings)
	return s.change(change.New(n, n, true), func() (splitterAfter, error) {
		sp.seq++
		rc := newReconf(sp.seq, n, n, 2, true)
		rc.moves(sp.table, table)
		rc.outs = r.mergerOuts
		return splitterAfter{rc: rc, rings: sp.rings, gather: sp.gather, table: table}, nil
	})
}

// Rebalance asks the running job for a rebalance now, aiming at skew
// target (≤ 1: the job's region.rebalance target, else
// balance.DefaultTarget), and returns the plan once it is made: the loads
// of the period since the last measurement, the planned skew and the
// steps queued (carried out from the next source batch or block on, while
// records flow; Snapshot().Rebalance counts the steps done). A plan of
// no moves means the target is met or key-group granularity allows no
// better. It waits up to two load periods (the channels answer between
// batches) or until ctx is done; ErrNoRebalance when the region is not
// keyed or has no rebalancing configured (Region.Rebalance nil), ErrEnded
// when the job ends first. Safe for
// concurrent use: the entry point of a control plane.
func (l Live) Rebalance(ctx context.Context, target float64) (RebalancePlan, error) {
	return l.rebalance(ctx, target, "")
}

// rebalance is Rebalance with the reason the plan's timeline row gives.
func (l Live) rebalance(ctx context.Context, target float64, reason string) (RebalancePlan, error) {
	b := l.r.bal
	if b == nil {
		return RebalancePlan{}, ErrNoRebalance
	}
	q := rebalanceRequest{target: target, reason: reason, reply: make(chan RebalancePlan, 1)}
	select {
	case b.requests <- q:
	case <-ctx.Done():
		return RebalancePlan{}, ctx.Err()
	case <-l.r.ctx.Done():
		return RebalancePlan{}, ErrEnded
	}
	select {
	case p := <-q.reply:
		return p, nil
	case <-ctx.Done():
		return RebalancePlan{}, ctx.Err()
	case <-l.r.ctx.Done():
		return RebalancePlan{}, ErrEnded
	}
}

// RebalanceReport sums up a run's rebalancing.
type RebalanceReport struct {
	Plans, Steps int64
	Groups       int64 // key groups moved by the steps done (planned or random)
	Bytes        int64 // state bytes of the groups plans chose (estimates)
	// First is the first plan (nil: none); Latest the records per channel
	// in the last period measured, and its skew.
	First      *RebalancePlan
	Latest     []uint64
	LatestSkew float64
	// Pauses of the channels that lost or gained key groups in a step:
	// p50, p99, max. A channel that waits at the marker pauses from the
	// marker to the end of adoption; one that holds (hold.go), for the
	// marker, every wait for the handoff at a later batch and the
	// adoptions.
	PauseP50, PauseP99, PauseMax time.Duration
	// Holds counts the gains of a step in which the gaining channel went
	// on processing while its key groups were in transit; HoldWaits
	// those of them in which a later batch (a watermark that fires, a
	// barrier, another marker) waited for the handoff.
	Holds, HoldWaits int64
}

func (r *run) rebalanceReport() *RebalanceReport {
	b := r.bal
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	rep := &RebalanceReport{Plans: b.plans, Steps: b.stepsN, Groups: b.moved, Bytes: b.bytes, First: b.first,
		Latest: slices.Clone(b.latest), LatestSkew: b.lastSkw}
	rep.PauseP50, rep.PauseP99, rep.PauseMax = r.balancePauses.percentiles()
	rep.Holds, rep.HoldWaits = r.holds.Load(), r.holdWaits.Load()
	return rep
}
