package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"streamd/core"
	"streamd/core/plan"
	"streamd/core/runtime/logic"
	"streamd/kvstate"
)

// The control plane's runtime side (docs/CONTROL.md; Trisk, SoCC 2021):
// reconfigurations issued to a running job through Live — by the HTTP API
// of cmd/streamd, by a control policy (policy.go), or by a Go program —
// wait in a queue that the goroutine that routes takes them from between
// batches: the single source stage after each source batch, or, with
// source workers, the worker that starts a block, under the exchange's
// lock, which places the change at a block boundary no worker has started
// (exchange.go). When nothing is queued that costs one atomic load per
// batch (per block with source workers). Each request is answered with
// its outcome: the sequence number it took effect at, the checkpoint's
// epoch, or why it was refused. Every reconfiguration is logged with its
// reason and inputs (slog), counted by kind, and kept in a bounded log
// that Live.Plan returns.

// Reconfiguration kinds (Reconfiguration.Kind, /metrics).
const (
	KindScale      = "scale"
	KindRebalance  = "rebalance"
	KindUpdate     = "update"
	KindCheckpoint = "checkpoint"
	KindStop       = "stop"
	KindPause      = "pause-controller"
	KindResume     = "resume-controller"
)

// Errors of the control plane. Callers test them with errors.Is.
var (
	// ErrRefused is plan.ErrRefused.
	ErrRefused = plan.ErrRefused
	// ErrEnded: the job ended before the request was carried out.
	ErrEnded = errors.New("the job has ended")
	// ErrStopped is the error Run returns for a job stopped by Live.Stop
	// with a savepoint (*StoppedError says at which checkpoint).
	ErrStopped = errors.New("stopped at a savepoint")
)

// StoppedError is what Run returns for a job that Live.Stop stopped
// after checkpoint Epoch completed: its committed output and checkpoints
// are kept, and a run with the same job restored from Epoch (--restore
// latest) goes on from there. It wraps ErrStopped.
type StoppedError struct{ Epoch uint64 }

func (e *StoppedError) Error() string {
	return fmt.Sprintf("%s: checkpoint %d", ErrStopped, e.Epoch)
}

func (e *StoppedError) Unwrap() error { return ErrStopped }

// Reconfiguration is one entry of the reconfiguration log.
type Reconfiguration struct {
	// At is when it was carried out (or refused), wall time.
	At time.Time `json:"at"`
	// Kind is one of the Kind constants.
	Kind string `json:"kind"`
	// Reason says who asked and why: "api", "policy levels: …",
	// "rebalancer: skew 1.42 > target 1.10".
	Reason string `json:"reason"`
	// Inputs are the figures and arguments it was decided on, as text.
	Inputs map[string]string `json:"inputs,omitempty"`
	// Seq is the splitter sequence number of its sync point (0: none, or
	// not yet known): records before it saw the old configuration.
	Seq uint64 `json:"seq,omitempty"`
	// Position is how many input records come before the sync point (-1:
	// not known: a source that cannot say where a block starts).
	Position int64 `json:"position"`
	// From and To are channel counts (a scale; equal for the others).
	From int `json:"from,omitempty"`
	To   int `json:"to,omitempty"`
	// Epoch is a checkpoint's (checkpoint, stop).
	Epoch uint64 `json:"epoch,omitempty"`
	// Block and Record, for a checkpoint taken by source workers, are its
	// position in blocks: after every record of the blocks before Block
	// and the first Record records of Block (both 0 otherwise, and at
	// the input's start).
	Block  int64 `json:"block,omitempty"`
	Record int64 `json:"record,omitempty"`
	// Err is why it was refused or failed ("" when it was carried out).
	Err string `json:"error,omitempty"`
}

// Outcome is the answer to a request: the log entry of what was done.
type Outcome = Reconfiguration

// logSize bounds the reconfiguration log kept in memory.
const logSize = 256

// control is a run's request queue and reconfiguration log.
type control struct {
	// queued is the number of requests waiting: the one atomic load the
	// routing goroutine pays per batch (per block) when it is 0.
	queued atomic.Int32
	mu     sync.Mutex
	reqs   []*ctlRequest

	// paused holds the job's policies (its own controller, RunPolicy's)
	// and the rebalancer's auto plans (pause-controller); requests are
	// still served.
	paused atomic.Bool

	logMu    sync.Mutex
	entries  []Reconfiguration // the newest logSize
	counts   map[string]int64  // by kind, carried out
	refusals map[string]int64  // by kind, refused or failed
	decision string            // the elastic controller's last decision
	log      *slog.Logger
}

// ctlRequest is one queued request.
type ctlRequest struct {
	kind     string
	channels int     // scale
	upd      *update // update
	reason   string
	inputs   map[string]string
	reply    chan ctlReply // buffered: the server never blocks
	// own: a scale the job's own controller decided, which its timeline
	// row already shows (controller.go).
	own bool
}

type ctlReply struct {
	out  Outcome
	wait <-chan error // a checkpoint: answered when it completes
	err  error
}

// enqueue queues q for the routing goroutine.
func (ct *control) enqueue(q *ctlRequest) {
	ct.mu.Lock()
	ct.reqs = append(ct.reqs, q)
	ct.queued.Store(int32(len(ct.reqs)))
	ct.mu.Unlock()
}

// take removes and returns the requests waiting (routing goroutine).
func (ct *control) take() []*ctlRequest {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	qs := ct.reqs
	ct.reqs = nil
	ct.queued.Store(0)
	return qs
}

// putBack queues requests that could not be served yet in front of any
// that came meanwhile (routing goroutine).
func (ct *control) putBack(qs []*ctlRequest) {
	if len(qs) == 0 {
		return
	}
	ct.mu.Lock()
	ct.reqs = append(qs, ct.reqs...)
	ct.queued.Store(int32(len(ct.reqs)))
	ct.mu.Unlock()
}

// record logs a reconfiguration (slog), counts it and keeps it; it
// returns e with its time set (now, if e had none).
func (ct *control) record(e Reconfiguration) Reconfiguration {
	if e.At.IsZero() {
		e.At = time.Now()
	}
	ct.logMu.Lock()
	if ct.counts == nil {
		ct.counts, ct.refusals = map[string]int64{}, map[string]int64{}
	}
	if e.Err == "" {
		ct.counts[e.Kind]++
	} else {
		ct.refusals[e.Kind]++
	}
	ct.entries = append(ct.entries, e)
	if len(ct.entries) > logSize {
		ct.entries = slices.Delete(ct.entries, 0, len(ct.entries)-logSize)
	}
	ct.logMu.Unlock()
	if ct.log == nil {
		return e
	}
	args := []any{"kind", e.Kind, "reason", e.Reason}
	keys := slices.Sorted(maps.Keys(e.Inputs))
	for _, k := range keys {
		args = append(args, k, e.Inputs[k])
	}
	if e.Seq != 0 {
		args = append(args, "seq", e.Seq, "position", e.Position)
	}
	if e.From != e.To {
		args = append(args, "from", e.From, "to", e.To)
	}
	if e.Epoch != 0 {
		args = append(args, "epoch", e.Epoch)
	}
	if e.Err != "" {
		ct.log.Warn("reconfiguration refused", append(args, "err", e.Err)...)
		return e
	}
	ct.log.Info("reconfiguration", args...)
	return e
}

// noteDecision keeps the elastic controller's last decision for Plan.
func (ct *control) noteDecision(d string) {
	ct.logMu.Lock()
	ct.decision = d
	ct.logMu.Unlock()
}

// answer replies to q and logs the outcome.
func (r *run) answer(q *ctlRequest, out Outcome, wait <-chan error, err error) {
	out.Kind, out.Reason, out.At = q.kind, q.reason, time.Now()
	if out.Inputs == nil {
		out.Inputs = q.inputs
	}
	if err != nil {
		out.Err = err.Error()
	}
	out = r.ctl.record(out)
	q.reply <- ctlReply{out: out, wait: wait, err: err}
}

// refused wraps ErrRefused with why.
func refused(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, args...))
}

// serveControl serves the queued requests between two source batches:
// a checkpoint's barrier goes as the loop injects one that is due, and an
// update of a pre-region operator rebuilds the pre-region chain. An error
// is fatal (a ring was cancelled): the stage stops.
func (s *sourceStage) serveControl() error {
	r := s.r
	var later []*ctlRequest
	defer func() { r.ctl.putBack(later) }()
	for _, q := range r.ctl.take() {
		switch q.kind {
		case KindScale:
			from := len(s.sp.rings)
			out := Outcome{From: from, To: q.channels, Position: s.position()}
			if err := r.checkScale(q.channels); err != nil {
				r.answer(q, out, nil, err)
				continue
			}
			if q.channels == from {
				r.answer(q, out, nil, nil)
				continue
			}
			if err := s.rescale(q.channels); err != nil {
				r.answer(q, out, nil, err)
				return err
			}
			out.Seq = s.sp.seq
			r.scaled(q, from)
			r.answer(q, out, nil, nil)
		case KindCheckpoint:
			if r.ck.inFlight.Load() {
				later = append(later, q) // after the one in flight
				continue
			}
			wait := r.ck.await(r.ck.epoch + 1)
			if err := s.injectBarrier(s.stamp, 0, 0); err != nil {
				r.ck.notify(r.ck.epoch, err)
				r.answer(q, Outcome{Position: s.position()}, nil, err)
				return err
			}
			out := Outcome{Epoch: r.ck.epoch, Position: s.position()}
			if s.sp != nil {
				out.Seq = s.sp.seq
			}
			r.answer(q, out, wait, nil)
		case KindUpdate:
			// The sync point is here, between two batches; the splitter
			// numbers the marker as it passes (its Seq, known after).
			u, pos := q.upd, s.position()
			if err := r.place(u, logic.Point{Block: -1, Position: pos}); err != nil {
				r.answer(q, Outcome{Position: pos}, nil, err)
				continue
			}
			swapped, err := meet(&s.logic, s.set.insts, u, core.Env{Channels: 1, Errors: r.job.Errors})
			if err != nil {
				r.answer(q, Outcome{Position: pos}, nil, err)
				return err
			}
			if swapped {
				s.pre = chainOf(s.set.insts, s.head)
			}
			m := core.NewMarker(core.Update)
			m.Control, m.Stamp = u, time.Now().UnixNano()
			if err := s.pre.Push(m); err != nil {
				r.answer(q, Outcome{Position: pos}, nil, err)
				return err
			}
			// u is the channels' once pushed: its Seq stays 0 (numbered
			// as it passed), the answer has the splitter's.
			out := u.outcome()
			out.Seq = s.sp.seq
			r.answer(q, out, nil, nil)
		default:
			r.answer(q, Outcome{}, nil, refused("unknown request %q", q.kind))
		}
	}
	return nil
}

// placeControl serves the first queued request that can be placed before
// block next, which no source worker has started (x.mu held; worker.go,
// beginNext): a change of the channel count makes a routing there, a
// checkpoint or an update takes the pending slot. It returns whether it
// placed something (then nothing else goes at next), and a fatal error.
func (r *run) placeControl(next int) (bool, error) {
	x := r.x
	qs := r.ctl.take()
	var later []*ctlRequest
	defer func() { r.ctl.putBack(later) }()
	for i, q := range qs {
		pos := int64(-1)
		if r.knowsPositions() {
			pos = x.recordsBefore(next)
		}
		switch q.kind {
		case KindScale:
			from := int(r.curChans.Load())
			out := Outcome{From: from, To: q.channels, Position: pos}
			if err := r.checkScale(q.channels); err != nil {
				r.answer(q, out, nil, err)
				continue
			}
			if q.channels == from {
				r.answer(q, out, nil, nil)
				continue
			}
			err := x.placeChange(q.channels, next, nil)
			out.Seq = uint64(next) << blockSeqBits
			if err == nil {
				r.scaled(q, from)
			}
			r.answer(q, out, nil, err)
			later = append(later, qs[i+1:]...)
			return true, err
		case KindCheckpoint:
			if r.ck.inFlight.Load() || x.mid >= 0 {
				later = append(later, q)
				continue
			}
			if t := x.barrierBlock(); t >= 0 {
				// Inside the block the channels read first, as a due one
				// (midBarrier); answered when its worker sends it.
				r.requestCheckpoint(t, q)
				later = append(later, qs[i+1:]...)
				return true, nil
			}
			wait := r.ck.await(r.ck.epoch + 1)
			x.pending, x.pendingInfo = next, r.startCheckpoint()
			x.pendingInfo.position, x.pendingInfo.block = x.recordsBefore(next), int64(next)
			r.answer(q, Outcome{Epoch: r.ck.epoch, Seq: uint64(next) << blockSeqBits, Position: pos, Block: int64(next)}, wait, nil)
			later = append(later, qs[i+1:]...)
			return true, nil
		case KindUpdate:
			// Its marker takes the pending slot: block next's worker
			// sends it (beginNext).
			u := q.upd
			if err := r.place(u, logic.Point{Seq: uint64(next) << blockSeqBits, Block: next, Position: pos}); err != nil {
				r.answer(q, Outcome{Position: pos}, nil, err)
				continue
			}
			x.pending = next
			x.floor = r.logic.Floor() // later barriers record u: none may go before it
			r.answer(q, u.outcome(), nil, nil)
			later = append(later, qs[i+1:]...)
			return true, nil
		default:
			r.answer(q, Outcome{}, nil, refused("unknown request %q", q.kind))
		}
	}
	return false, nil
}

// endUpdates is the routing side at the end of the input (the single
// source stage at its source's end; with source workers, under x.mu, once
// every block has been started): no update is placed from now on
// (logic.Log.End), and those queued are answered with ErrEnded now rather
// than when the run ends — no record would see their logic.
func (r *run) endUpdates() {
	r.logic.End()
	if r.ctl.queued.Load() == 0 {
		return
	}
	var later []*ctlRequest
	for _, q := range r.ctl.take() {
		if q.kind != KindUpdate {
			later = append(later, q)
			continue
		}
		r.answer(q, Outcome{Position: -1}, nil, fmt.Errorf("%w: %w", ErrEnded, logic.ErrEnded))
	}
	r.ctl.putBack(later)
}

// requestCheckpoint starts the checkpoint control request q asks for and
// requests its barrier in block t, which a worker is reading (x.mu held,
// none in flight or requested); q is answered when the barrier is sent
// (sendBarrier), with its sequence number and (block, record) position.
func (r *run) requestCheckpoint(t int, q *ctlRequest) {
	wait := r.ck.await(r.ck.epoch + 1)
	r.x.requestBarrier(t)
	r.x.midInfo.req, r.x.midInfo.wait = q, wait
}

// placeCheckpoint is what a source worker does between two batches while
// control requests are queued (x.mu held): the first checkpoint request
// goes inside the smallest block being read, when no checkpoint is in
// flight or requested. Other requests wait for a block start
// (placeControl).
func (r *run) placeCheckpoint() {
	x := r.x
	if r.ck == nil || r.ck.inFlight.Load() || x.mid >= 0 {
		return
	}
	t := x.barrierBlock()
	if t < 0 {
		return
	}
	qs := r.ctl.take()
	if i := slices.IndexFunc(qs, func(q *ctlRequest) bool { return q.kind == KindCheckpoint }); i >= 0 {
		r.requestCheckpoint(t, qs[i])
		qs = slices.Delete(qs, i, i+1)
	}
	r.ctl.putBack(qs)
}

// minChannels is the fewest channels a scale may ask for: the elastic
// controller's minimum, 1 without one.
func (r *run) minChannels() int {
	if reg := r.job.Region; reg != nil && reg.Elastic != nil && reg.Elastic.Config.MinChannels > 1 {
		return reg.Elastic.Config.MinChannels
	}
	return 1
}

// knowsPositions says whether the source workers' source can say how
// many records come before a block (core.BlockStarts).
func (r *run) knowsPositions() bool {
	_, ok := r.x.src.(core.BlockStarts)
	return ok
}

// checkScale refuses a channel count the region cannot run with: below
// the elastic controller's minimum (1 without one) or above the region's
// maximum.
func (r *run) checkScale(n int) error {
	lo := r.minChannels()
	if n < lo || n > r.maxChannels {
		return refused("scale to %d channels: this region runs with %d to %d (region.elastic.min_channels and max_channels, or region.channels)", n, lo, r.maxChannels)
	}
	return nil
}

// scaled writes a scale from from channels that the job's own
// controller did not decide into the timeline (--elastic-log). The
// policies see the change in their next snapshot (Metrics.Whole).
func (r *run) scaled(q *ctlRequest, from int) {
	if !q.own {
		r.timeline.scale(time.Now(), from, q.channels, q.reason)
	}
}

// Scale asks the running job to change its region's channel count to n,
// and returns once the change is placed: Outcome.Seq is the splitter
// sequence number of its sync point (the Reconfig marker), From and To
// the channel counts. The channels move their key groups while records
// flow (rescale.go). A count outside the region's range is refused
// (ErrRefused) without touching the job; a job without a region refuses
// every count. reason is logged with inputs (nil: none). Safe for
// concurrent use.
func (l Live) Scale(ctx context.Context, n int, reason string, inputs map[string]string) (Outcome, error) {
	q := &ctlRequest{kind: KindScale, channels: n, reason: reason, inputs: inputs}
	if out, err := l.check(q); err != nil {
		return out, err
	}
	return l.request(ctx, q)
}

// check refuses (and logs) a scale the job cannot carry out, before it
// is queued.
func (l Live) check(q *ctlRequest) (Outcome, error) {
	if l.r.job.Region == nil {
		return l.refuse(q.kind, q.reason, q.inputs, refused("the job has no parallel region to scale"))
	}
	if err := l.r.checkScale(q.channels); err != nil {
		return l.refuse(q.kind, q.reason, q.inputs, err)
	}
	return Outcome{}, nil
}

// Checkpoint takes a checkpoint now (after the one in flight, if any) and
// returns once it is complete: Outcome.Epoch is its epoch. A job without
// checkpointing refuses (ErrRefused); a checkpoint that fails or times
// out is an error naming it.
func (l Live) Checkpoint(ctx context.Context, reason string) (Outcome, error) {
	if l.r.ck == nil {
		return l.refuse(KindCheckpoint, reason, nil, refused("the job has no checkpointing (checkpoint: in the job file)"))
	}
	return l.request(ctx, &ctlRequest{kind: KindCheckpoint, reason: reason})
}

// Stop stops the running job. With savepoint it first takes a checkpoint
// (Checkpoint) and, once it is complete, stops every stage: Run returns a
// *StoppedError, the sink's output is committed up to that checkpoint and
// the rest discarded, and the checkpoints are kept, so that the job
// restored from the newest one (--restore latest) produces the output of
// an uninterrupted run. Without savepoint it is Ctrl-C: Run returns
// ErrInterrupted. Stop returns once the stop is under way, not when Run
// has returned.
func (l Live) Stop(ctx context.Context, savepoint bool, reason string) (Outcome, error) {
	r := l.r
	if !savepoint {
		out := Outcome{Kind: KindStop, Reason: reason, Position: -1}
		out = r.ctl.record(out)
		r.cancel()
		return out, nil
	}
	if r.ck == nil {
		return l.refuse(KindStop, reason, nil, refused("stop --savepoint needs checkpointing (checkpoint: in the job file)"))
	}
	out, err := l.Checkpoint(ctx, reason)
	if err != nil {
		return out, err
	}
	out.Kind = KindStop
	out = r.ctl.record(out)
	r.fail(&StoppedError{Epoch: out.Epoch})
	r.cancelRings()
	return out, nil
}

// PauseController holds the job's policies (its own controller and
// those RunPolicy runs: no Step) and the rebalancer's auto plans until
// ResumeController; requests through Live are still carried out.
func (l Live) PauseController(reason string) Outcome {
	l.r.ctl.paused.Store(true)
	out := Outcome{Kind: KindPause, Reason: reason, Position: -1}
	out = l.r.ctl.record(out)
	return out
}

// ResumeController undoes PauseController; the first period after it
// is not whole (Metrics.Whole), so the controllers measure afresh.
func (l Live) ResumeController(reason string) Outcome {
	l.r.ctl.paused.Store(false)
	out := Outcome{Kind: KindResume, Reason: reason, Position: -1}
	out = l.r.ctl.record(out)
	return out
}

// RebalanceNow is Rebalance logged as a reconfiguration with its reason.
func (l Live) RebalanceNow(ctx context.Context, target float64, reason string) (RebalancePlan, Outcome, error) {
	in := map[string]string{}
	if target > 0 {
		in["target"] = fmt.Sprint(target)
	}
	n := l.Channels()
	if l.r.bal == nil {
		out, err := l.refuse(KindRebalance, reason, in, refused("the job has no keyed region to rebalance"))
		return RebalancePlan{}, out, err
	}
	p, err := l.rebalance(ctx, target, reason)
	out := Outcome{Kind: KindRebalance, Reason: reason, Inputs: in, From: n, To: n, Position: -1}
	if err != nil {
		out.Err = err.Error()
		out = l.r.ctl.record(out)
		return p, out, err
	}
	in["loads"], in["skew"] = fmt.Sprint(p.Loads), fmt.Sprintf("%.3f", p.Before)
	in["planned_skew"], in["groups"], in["steps"] = fmt.Sprintf("%.3f", p.After), fmt.Sprint(p.Groups), fmt.Sprint(p.Steps)
	out = l.r.ctl.record(out)
	return p, out, nil
}

// Refuse records a request of kind that the caller refused before it
// reached the job — the job loader's checks of an update's body (a
// window's size or aggregates changed, an unknown operator) — as the
// job's own refusals are recorded: logged ("reconfiguration refused"),
// counted (Plan.Refused, Counts) and kept in the log. err says why and
// should wrap ErrRefused; Refuse returns the log entry and err. The job
// is unchanged. Safe for concurrent use.
func (l Live) Refuse(kind, reason string, inputs map[string]string, err error) (Outcome, error) {
	return l.refuse(kind, reason, inputs, err)
}

// refuse logs and returns a request refused before it was queued.
func (l Live) refuse(kind, reason string, inputs map[string]string, err error) (Outcome, error) {
	out := Outcome{Kind: kind, Reason: reason, Inputs: inputs, Position: -1, Err: err.Error()}
	out = l.r.ctl.record(out)
	return out, err
}

// request queues q and waits for its answer (and, for a checkpoint, for
// its completion), ctx or the job's end.
func (l Live) request(ctx context.Context, q *ctlRequest) (Outcome, error) {
	r := l.r
	q.reply = make(chan ctlReply, 1)
	if r.ctx.Err() != nil {
		return Outcome{Kind: q.kind, Position: -1}, ErrEnded
	}
	r.ctl.enqueue(q)
	var rep ctlReply
	select {
	case rep = <-q.reply:
	case <-ctx.Done():
		return Outcome{Kind: q.kind, Position: -1}, ctx.Err()
	case <-r.ctx.Done():
		return Outcome{Kind: q.kind, Position: -1}, ErrEnded
	}
	if rep.err != nil || rep.wait == nil {
		return rep.out, rep.err
	}
	select {
	case err := <-rep.wait:
		return rep.out, err
	case <-ctx.Done():
		return rep.out, ctx.Err()
	case <-r.ctx.Done():
		return rep.out, ErrEnded
	}
}

// Plan is a running job's configuration and recent reconfigurations (the
// control plane's status).
type Plan struct {
	Job string `json:"job"`
	// Channels now, and the range a scale may ask for.
	Channels    int `json:"channels"`
	MinChannels int `json:"min_channels"`
	MaxChannels int `json:"max_channels"`
	// SourceWorkers reading the source (0: the single source stage).
	SourceWorkers int `json:"source_workers"`
	// KeyGroups of the region (0: stateless or none) and how many each
	// channel owns now.
	KeyGroups     int   `json:"key_groups"`
	GroupsPerChan []int `json:"groups_per_channel,omitempty"`
	// Records each channel has processed since the job started, and the
	// last rebalancer period's records per channel and skew (max / mean).
	Records     []int64  `json:"records_per_channel"`
	PeriodLoads []uint64 `json:"period_loads,omitempty"`
	Skew        float64  `json:"skew"`
	// Pauses: per channel, the time it paused in reconfigurations, ns.
	PauseNs []int64 `json:"pause_ns_per_channel,omitempty"`
	// Operators: name, stage (pre, region, post) and whether update can
	// replace its logic.
	Operators []PlanOperator `json:"operators"`
	// Controller is the elastic policy ("" none), Paused whether
	// pause-controller holds it, Decision its last decision.
	Controller string `json:"controller,omitempty"`
	Paused     bool   `json:"controller_paused"`
	Decision   string `json:"last_decision,omitempty"`
	// Checkpoint is the newest complete checkpoint's epoch (0: none).
	Checkpoint uint64 `json:"checkpoint"`
	// Counts are reconfigurations carried out, by kind; Refused those
	// refused or failed.
	Counts  map[string]int64 `json:"counts"`
	Refused map[string]int64 `json:"refused,omitempty"`
	// Log is the newest reconfigurations, oldest first.
	Log []Reconfiguration `json:"log"`
}

// PlanOperator is one operator of a Plan.
type PlanOperator struct {
	Name      string `json:"name"`
	Stage     string `json:"stage"`
	Updatable bool   `json:"updatable"`
}

// Queued is the number of requests waiting to be placed: sent, not yet
// taken by the stage that places them.
func (l Live) Queued() int { return int(l.r.ctl.queued.Load()) }

// Plan returns the job's plan now.
func (l Live) Plan() Plan {
	r := l.r
	p := Plan{Job: r.job.Name, Channels: l.Channels(), MinChannels: r.minChannels(), MaxChannels: r.maxChannels, Counts: map[string]int64{}}
	if r.x != nil {
		p.SourceWorkers = len(*r.x.splitters.Load())
	}
	if reg := r.job.Region; reg != nil {
		if e := reg.Elastic; e != nil && e.Policy != "off" {
			p.Controller = e.Policy
		}
		if len(reg.Key) > 0 {
			p.KeyGroups = reg.Groups
		}
		for c := range p.Channels {
			p.Records = append(p.Records, r.chanStats[c].Records.Load())
			p.PauseNs = append(p.PauseNs, r.chanStats[c].PauseNs.Load())
		}
		if t := r.table(); t != nil {
			p.GroupsPerChan = make([]int, t.Channels())
			for _, o := range t.Owners() {
				p.GroupsPerChan[o]++
			}
		}
	}
	if rb := r.rebalanceReport(); rb != nil {
		p.PeriodLoads, p.Skew = rb.Latest, rb.LatestSkew
	}
	for _, s := range []struct {
		name string
		defs []core.OperatorDef
	}{{"pre", r.job.Pre}, {"region", r.job.RegionOps()}, {"post", r.job.Post}} {
		for _, d := range s.defs {
			p.Operators = append(p.Operators, PlanOperator{Name: d.Name, Stage: s.name, Updatable: (d.State == "" && d.Partial == nil) || d.Retune != nil})
		}
	}
	p.Paused = r.ctl.paused.Load()
	if r.ck != nil {
		p.Checkpoint = r.ck.committed.Load()
	}
	r.ctl.logMu.Lock()
	maps.Copy(p.Counts, r.ctl.counts)
	if len(r.ctl.refusals) > 0 {
		p.Refused = maps.Clone(r.ctl.refusals)
	}
	p.Decision = r.ctl.decision
	p.Log = slices.Clone(r.ctl.entries)
	r.ctl.logMu.Unlock()
	return p
}

// table is the key-group table routed under now (nil: stateless).
func (r *run) table() *kvstate.Table {
	if r.x != nil {
		r.x.mu.Lock()
		defer r.x.mu.Unlock()
		return r.x.configs[len(r.x.configs)-1].table
	}
	if r.splitter == nil {
		return nil
	}
	return r.splitter.tableNow.Load()
}

// Counts returns the reconfigurations carried out by kind, and those
// refused or failed, for /metrics.
func (l Live) Counts() (done, refusedN map[string]int64) {
	ct := &l.r.ctl
	ct.logMu.Lock()
	defer ct.logMu.Unlock()
	return maps.Clone(ct.counts), maps.Clone(ct.refusals)
}
