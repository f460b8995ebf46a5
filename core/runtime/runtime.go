package runtime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"streamd/core"
	"streamd/core/plan"
	"streamd/core/runtime/logic"
	"streamd/kvstate"
	"streamd/ring"
	"streamd/sched"
	"streamd/snapshot"
)

// ErrInterrupted is returned by Run when its context was cancelled (Ctrl-C):
// the job stopped early and its file output was discarded.
var ErrInterrupted = errors.New("interrupted")

// DefaultRingSize is the capacity of each ring, in batches.
const DefaultRingSize = 64

// run is one execution of a Job.
type run struct {
	job    *Job
	opt    options // Run's Options
	log    *slog.Logger
	cancel context.CancelFunc

	errMu sync.Mutex
	err   error

	ctx            context.Context
	src            *sourceStage // the single source stage (source.go); nil with source workers
	splitter       *splitter
	bell           *doorbell
	chanStats      []ChannelStats // one per channel index up to maxChannels
	regionOut      *core.Schema
	regionCounters []*core.Counters
	letters        letterQueue // the channels' dead letters, for the merger (letters.go)
	failures       failures    // operator failures in channels, decided in input order (failure.go)
	// logic is the update sync protocol's routing side: the changes of
	// logic placed so far (the restored checkpoint's first); updatesText
	// their JSON, which every barrier placed after them records (routing
	// goroutine; update.go).
	logic             *logic.Log
	updates           []*update // placed, by epoch − 1 (the source workers read them under x.mu)
	updatesText       string
	chanOps           []core.OperatorDef // a channel's operators: the region's, then the first post-region operator's Partial (routing goroutine; updates replace it, update.go)
	regionDefs        []core.OperatorDef // chanOps as built, for reports
	preDefs           []core.OperatorDef // the pre-region operators source workers added later start with (update.go), then the region's local step (core.OperatorDef.Local) if any
	preBuilt          []core.OperatorDef // preDefs as built, for reports
	recordsIn, recOut atomic.Int64
	batchesIn         atomic.Int64 // source batches read (scheduled changes count them)
	maxChannels       int
	placer            Placer
	wg                sync.WaitGroup
	// parkSoon says the stages share cores (no spareCore): a blocked
	// ring side spins, then parks, without yielding its thread (newRing).
	parkSoon bool

	// ringsMu guards rings, every ring ever created, so that a failing
	// stage can cancel them all.
	ringsMu sync.Mutex
	rings   []interface{ Cancel() }
	chanIn  []input // channel c's input, by c (ringsMu; for Live.RingLen)

	// Checkpoints (checkpoint.go).
	ck           *checkpointer
	restore      *snapshot.Checkpoint
	initialTable *kvstate.Table
	sinkEpoch    uint64 // epochs committed to the sink (sink goroutine)

	// Rebalancing (balance.go): nil without; loads[c] is channel c's
	// current stage's count of records per key group.
	bal           *balancer
	loads         []atomic.Pointer[groupLoad]
	balancePauses durationHist
	// holds counts the rebalance steps in which a gaining channel went on
	// processing while its key groups were in transit (hold.go);
	// holdWaits those of them in which a later batch waited for them.
	holds, holdWaits atomic.Int64

	// Live reconfiguration (rescale.go) and the control plane's requests
	// (control.go).
	ctl                       control
	rescales                  atomic.Int64
	pauses                    durationHist
	drains                    durationHist // the source's wait for the old channels' backlog
	own                       *stepper     // the region's own controller (controller.go)
	timeline                  *timeline    // Region.Timeline (timeline.go)
	usedChans                 atomic.Int64 // highest channel count reached
	curChans                  atomic.Int64 // the splitter's channel count now
	start                     time.Time
	preCounters, postCounters []*core.Counters
	// CPU accounts (stagecpu.go): cpus is every stage's ever started
	// (cpuMu), procCPU0 the process's CPU at start.
	cpuMu    sync.Mutex
	cpus     []*stageCPU
	procCPU0 time.Duration
	procCPU  atomic.Int64 // ns: the process's CPU during the run, set when it ends

	// out is the parallel output side (output.go), nil when the merger
	// (or the source stage) runs the one output worker inline.
	out *output

	// x is the M×N exchange of parallel source workers (exchange.go), nil
	// for the single source stage; splitters are the one splitter or the
	// workers', for the report.
	x         *exchange
	splitters []*splitter

	// Operator instances of every stage, ever (instantiate, closeSet).
	instMu sync.Mutex
	sets   []*instSet

	// What build prepared for launch and teardown.
	timeField           int
	timeUnit, startWM   int64
	sinkOpen, ckRunning bool

	// mergerOuts are the channels' output rings as of the splitter's
	// current configuration (source stage only; the merger learns of
	// changes in-band).
	mergerOuts []*ring.SPSC[*core.Batch]
}

type instance struct {
	def      core.OperatorDef
	op       core.Operator
	counters *core.Counters
}

// ChannelStats are one channel's counters, updated once per batch.
type ChannelStats struct {
	Records atomic.Int64 // records processed
	BusyNs  atomic.Int64 // ns inside operators, waits excluded
	// CPUNs is the channel thread's CPU time working, in ns: thread CPU
	// (CLOCK_THREAD_CPUTIME_ID) less the time spent waiting on rings,
	// from after its restore or join. The clock is sampled (stageCPU.tick:
	// at most every cpuSampleEvery, 1 ms, of data batches, at every wait
	// and at the end), so the figure trails the work by at most 1 ms while
	// the channel is busy. Unlike BusyNs it does not count time the thread
	// was descheduled. 0 where the clock is missing or the accounts are
	// off.
	CPUNs atomic.Int64
	// PauseNs is the time the channel paused in live reconfigurations
	// (channel changes and rebalance steps), ns.
	PauseNs atomic.Int64
	// Batches counts the batches (data and markers) the channel has
	// finished, to compare with what the splitter pushed to it.
	Batches atomic.Uint64
	// alive while the channel's stage runs; progress: the last sequence
	// number it has processed (failure.go).
	alive    atomic.Bool
	progress atomic.Uint64
}

// fail records err as the run's error if it is the first, and cancels the
// run's context. Any stage may call it.
func (r *run) fail(err error) {
	if errors.Is(err, ring.ErrCanceled) && r.ctx.Err() != nil {
		// A ring cancelled under a stage is never the cause: every
		// cancelRings follows a fail (whose error came first) or a cancel
		// of the run's context (Ctrl-C, Live.Stop). In the second case
		// the run was interrupted, whichever stage noticed first.
		err = fmt.Errorf("%w (%w)", context.Canceled, err)
	}
	r.errMu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.errMu.Unlock()
	r.cancel()
}

// recoverStage turns a panic in a stage into the job's error and aborts
// every ring, so that all other stages stop too.
func (r *run) recoverStage(stage string, index int) {
	v := recover()
	if v == nil {
		return
	}
	r.fail(fmt.Errorf("%s %d panicked: %v\n%s", stage, index, v, debug.Stack()))
	r.cancelRings()
}

func (r *run) cancelRings() {
	r.ringsMu.Lock()
	for _, rg := range r.rings {
		rg.Cancel()
	}
	r.ringsMu.Unlock()
	r.bell.ring()
}

// newRing makes a ring of batches, which every caller puts on a barrier's
// path with a debloating producer (its slow start: slowStart), and
// registers it.
func (r *run) newRing() (*ring.SPSC[*core.Batch], error) {
	rg, err := ring.New[*core.Batch](r.job.RingSize)
	if err != nil {
		return nil, err
	}
	if r.parkSoon {
		rg.SetYield(0)
	}
	slowStart(r.job, rg, debloatMin)
	r.register(rg)
	return rg, nil
}

// register records a ring so that a failing stage can cancel it.
func (r *run) register(rg interface{ Cancel() }) {
	r.ringsMu.Lock()
	r.rings = append(r.rings, rg)
	r.ringsMu.Unlock()
}

// newStageCPU opens a CPU account for a stage about to start.
func (r *run) newStageCPU(stage string, index int) *stageCPU {
	return r.openStageCPU(&stageCPU{stage: stage, index: index})
}

// newReplicatedStageCPU is newStageCPU for a replicated stage (a channel,
// a source worker, an output worker), marked before reports can read it.
func (r *run) newReplicatedStageCPU(stage string, index int) *stageCPU {
	return r.openStageCPU(&stageCPU{stage: stage, index: index, replicated: true})
}

func (r *run) openStageCPU(sc *stageCPU) *stageCPU {
	sc.shared = r.parkSoon
	r.cpuMu.Lock()
	r.cpus = append(r.cpus, sc)
	r.cpuMu.Unlock()
	return sc
}

func (r *run) firstErr() error {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	return r.err
}

// instSet is the operator instances of one stage (pre, post, or one
// channel's region operators). Each is closed exactly once (closeSet).
type instSet struct {
	insts  []instance
	closed bool // r.instMu
}

// instantiate creates the instances of defs for one stage and registers
// them, so that teardown closes them whatever happens. On an error the
// instances already made are registered too.
func (r *run) instantiate(defs []core.OperatorDef, env core.Env, counters []*core.Counters) (*instSet, error) {
	set := &instSet{insts: make([]instance, 0, len(defs))}
	r.instMu.Lock()
	r.sets = append(r.sets, set)
	r.instMu.Unlock()
	for i, d := range defs {
		op, err := d.New(env)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.Name, err)
		}
		set.insts = append(set.insts, instance{def: d, op: op, counters: counters[i]})
	}
	return set, nil
}

// closeSet closes the instances of set (core.Closer) unless that was done
// already, and returns the first error. The caller owns the instances: it
// is their stage's goroutine after its loop, or teardown after every stage
// stopped.
func (r *run) closeSet(set *instSet) error {
	r.instMu.Lock()
	done := set.closed
	set.closed = true
	r.instMu.Unlock()
	if done {
		return nil
	}
	var first error
	for _, in := range set.insts {
		if c, ok := in.op.(core.Closer); ok {
			if err := c.Close(); err != nil && first == nil {
				first = fmt.Errorf("close %s: %w", in.def.Name, err)
			}
		}
	}
	return first
}

// closeAll closes every instance set not closed yet (teardown).
func (r *run) closeAll() error {
	r.instMu.Lock()
	sets := slices.Clone(r.sets)
	r.instMu.Unlock()
	var first error
	for _, set := range sets {
		if err := r.closeSet(set); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func newCounters(n int) []*core.Counters {
	cs := make([]*core.Counters, n)
	for i := range cs {
		cs[i] = new(core.Counters)
	}
	return cs
}

func chainOf(insts []instance, final func(*core.Batch) error) *core.Chain {
	ops := make([]core.Operator, len(insts))
	outs := make([]*core.Schema, len(insts))
	cs := make([]*core.Counters, len(insts))
	for i, in := range insts {
		ops[i], outs[i], cs[i] = in.op, in.def.Out, in.counters
	}
	return core.NewChain(ops, outs, cs, final)
}

func outSchema(in *core.Schema, defs []core.OperatorDef) *core.Schema {
	if len(defs) == 0 {
		return in
	}
	return defs[len(defs)-1].Out
}

// Run executes the job until its source ends, an error stops it, or ctx is
// cancelled (then it returns ErrInterrupted, wrapped). On success the sink
// is closed (file output committed); on failure it is aborted. The report
// is returned in every case except a job that failed before it started
// (then the report is nil).
//
// Run owns the job's source, sink, error policy and operator instances
// from the call on: whatever happens, when it returns every stage has
// stopped, every operator instance has been closed (core.Closer), the sink
// has been closed or aborted (if it was opened), and the error policy and
// the source have been closed. One path does that: teardown.
//
// opts say how it runs, apart from what it is: Placement, OnStart.
func Run(ctx context.Context, job *plan.Job, opts ...Option) (*Report, error) {
	if cp := job.Checkpoint; cp != nil {
		defer cp.Store.Unlock() // a store from snapshot.OpenLocked: the run is over
	}
	if err := job.Validate(); err != nil {
		if job.Source != nil {
			job.Source.Close()
		}
		if job.Errors != nil {
			job.Errors.Close()
		}
		return nil, err
	}
	if job.Errors == nil {
		job.Errors, _ = core.NewErrorPolicy(core.Fail, "")
	}
	if job.RingSize == 0 {
		job.RingSize = DefaultRingSize
	}
	r := &run{job: job, log: job.Log, bell: newDoorbell()}
	for _, o := range opts {
		o(&r.opt)
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.ctx, r.cancel = context.WithCancel(ctx)
	defer r.cancel()
	err := r.build()
	if err == nil {
		err = r.launch()
	}
	return r.teardown(err)
}

// build instantiates the pre- and post-region operators, prepares
// checkpoints and restore, the region's rings and splitter, and opens the
// sink. It starts no goroutine; whatever it made, teardown undoes.
func (r *run) build() error {
	job := r.job
	r.start = time.Now()
	r.procCPU0 = sched.ProcessCPU()
	env := core.Env{Channel: 0, Channels: 1, Errors: job.Errors}
	r.preDefs = job.Pre
	r.logic = logic.NewLog(nil, 0)
	if r.restore != nil {
		r.updatesText = r.restore.Meta.Extra[UpdatesExtra]
		recs, err := RestoredUpdates(&r.restore.Meta)
		if err != nil {
			return err
		}
		r.logic = logic.NewLog(recs, 0)
	}
	if reg := job.Region; reg != nil && len(reg.Key) > 0 && len(reg.Ops) > 0 && reg.Ops[0].Local != nil {
		// The region's local step (local-global aggregation) runs last
		// before the splitter, in the source stage or every source worker.
		r.preDefs = append(slices.Clip(job.Pre), *reg.Ops[0].Local)
	}
	r.preBuilt = r.preDefs
	r.preCounters, r.postCounters = newCounters(len(r.preDefs)), newCounters(len(job.Post))
	r.letters.errs = job.Errors
	r.ctl.log = r.log
	var err error
	cores := UsableCores()
	workers := sourceWorkers(job, cores)
	r.parkSoon = !spareCore(jobStages(job, workers, cores), cores)
	if workers == 0 {
		// The single source stage (the exchange's workers make their own).
		if r.src, err = r.newSourceStage(env); err != nil {
			return err
		}
	}
	splitIn := outSchema(job.Source.Schema(), job.Pre)
	sinkIn := splitIn
	var startBlock int  // the block the source workers start at (a restore's)
	var startSkip int64 // the records of it they drop
	if cp := job.Checkpoint; cp != nil {
		if cp.Store == nil {
			return errors.New("checkpointing needs a store")
		}
		_, counted := job.Source.(core.BlockStarts)
		if workers == 0 {
			r.src.replay = core.NewReplayable(job.Source)
			job.Source = r.src.replay
		}
		if cp.Restore != nil {
			var ops []core.OperatorDef
			groups := 0
			if reg := job.Region; reg != nil {
				ops, groups = reg.Ops, cmp.Or(reg.Groups, kvstate.DefaultGroups)
			}
			if err := CheckRestore(&cp.Restore.Meta, cp, &Region{Ops: ops, Groups: groups}); err != nil {
				return err
			}
			r.restore = cp.Restore
			if workers == 0 {
				if b := cp.Restore.Meta.Sources["block"]; b > 0 && !counted {
					return unknownPosition(b)
				}
				if rs, ok := r.src.replay.Source.(core.Resumer); ok {
					// A live file: the state names the file and the offset
					// (core.Resumer); Skip then goes there.
					if err := rs.Resume(cp.Restore.Meta.Extra["source_state"]); err != nil {
						return fmt.Errorf("restore %s: %w", snapshot.Name(cp.Restore.Meta.ID), err)
					}
				}
				// Inside a batch (a barrier between two pieces: cut.go), the
				// rest of that batch comes as one batch, as it did.
				if err := r.src.replay.SkipInBatch(cp.Restore.Meta.Sources["source"], cp.Restore.Meta.Sources[batchRecords]); err != nil {
					return err
				}
				if r.src.wm.times != nil {
					if err := r.src.wm.times.restore(&cp.Restore.Meta); err != nil {
						return err
					}
				}
			} else if startBlock, startSkip, err = restoredBlock(&cp.Restore.Meta, job.Source.(core.Splittable)); err != nil {
				return err
			}
		}
	}
	if reg := job.Region; reg != nil {
		if reg.Groups == 0 {
			reg.Groups = kvstate.DefaultGroups
		}
		if err := kvstate.CheckGroups(reg.Groups); err != nil {
			return err
		}
		n := reg.Channels
		r.chanOps = reg.Ops
		if len(job.Post) > 0 && job.Post[0].Partial != nil {
			p := job.Post[0]
			r.chanOps = append(slices.Clip(reg.Ops), core.OperatorDef{Name: p.Name + " (partial)", Out: outSchema(splitIn, reg.Ops), New: p.Partial})
		}
		r.regionCounters = newCounters(len(r.chanOps))
		r.regionDefs = r.chanOps
		r.maxChannels = max(n, reg.MaxChannels)
		r.usedChans.Store(int64(n))
		r.curChans.Store(int64(n))
		r.chanStats = make([]ChannelStats, r.maxChannels)
		r.timeline = newTimeline(reg.Timeline)
		if reg.Rebalance != nil && len(reg.Key) > 0 {
			r.bal = newBalancer(reg.Rebalance, reg.Groups, r.log)
			r.bal.timeline = r.timeline
			r.bal.ctl = &r.ctl
			r.loads = make([]atomic.Pointer[groupLoad], r.maxChannels)
		}
		if workers > 0 {
			if err := r.buildExchange(workers, splitIn, startBlock, startSkip); err != nil {
				return err
			}
		} else {
			ins := make([]*ring.SPSC[*core.Batch], n)
			for c := range ins {
				if ins[c], err = r.newRing(); err != nil {
					return err
				}
			}
			if r.splitter, err = newSplitter(ins, splitIn, reg, r.maxChannels); err != nil {
				return err
			}
			r.splitter.table = startTable(r.restore, r.splitter.table != nil, reg.Groups, n)
			r.splitter.tableNow.Store(r.splitter.table)
			r.splitter.cpu = r.src.cpu
			r.splitter.force = r.opt.forcePieces
			if r.splitter.db = r.newDebloater(); r.splitter.db != nil {
				r.splitter.db.countPieces(make([]atomic.Int32, r.maxChannels))
			}
			if lg := batchLinger(job); lg > 0 {
				r.splitter.gatherOn(lg, r.clock())
			}
			r.splitters = []*splitter{r.splitter}
			r.initialTable = r.splitter.table
			if err := r.buildController(); err != nil {
				return err
			}
		}
		r.regionOut = outSchema(splitIn, reg.Ops)
		sinkIn = r.regionOut
	}
	sinkIn = outSchema(sinkIn, job.Post)
	r.timeField, r.timeUnit = -1, 1
	if f := job.EventTime.Field; f != "" && job.EventTime.Of != nil {
		return errors.New("event time: both a field and a function (EventTime.Of)")
	}
	if f := job.EventTime.Field; f != "" {
		s := job.Source.Schema()
		if r.timeField, err = s.Lookup(f); err != nil {
			return fmt.Errorf("event time: %w", err)
		}
		switch s.Fields[r.timeField].Type {
		case core.Timestamp:
		case core.Int64:
			r.timeUnit = job.EventTime.Unit
			if r.timeUnit <= 0 {
				r.timeUnit = int64(time.Millisecond)
			}
		default:
			return fmt.Errorf("event time field %q is a %s, not a timestamp or int64", f, s.Fields[r.timeField].Type)
		}
	}
	r.startWM = core.NoTime
	if r.restore != nil {
		r.startWM = r.restore.Meta.Watermark
		if r.splitter != nil {
			r.splitter.lastWM = r.startWM
		}
	}
	if job.Checkpoint != nil {
		var regionOps []core.OperatorDef
		groups := 0
		if job.Region != nil {
			regionOps, groups = job.Region.Ops, job.Region.Groups
		}
		r.ck = newCheckpointer(*job.Checkpoint, regionOps, groups)
		r.sinkEpoch = r.ck.committed.Load()
	}
	if es, ok := job.Sink.(core.EpochSink); ok && r.ck != nil {
		var restored uint64
		if r.restore != nil {
			restored = r.restore.Meta.ID
			if err := VerifyOutput(job.Sink, r.restore); err != nil {
				return err
			}
		}
		if err := es.OpenEpochs(sinkIn, restored); err != nil {
			return err
		}
	} else if err := job.Sink.Open(sinkIn); err != nil {
		return err
	}
	r.sinkOpen = true
	return r.buildOutput(outputWorkers(job, len(r.allSplitters()), cores))
}

// launch starts the stages: the channels, the merger, the checkpoint
// coordinator and the source. On an error, what was started is stopped by
// teardown.
func (r *run) launch() error {
	job := r.job
	for _, f := range r.opt.onStart {
		f(Live{r: r})
	}
	r.placer = r.opt.placer
	if r.placer == nil {
		r.placer = goPlacer{}
	}
	var head func(*core.Batch) error
	if job.Region == nil {
		// The source stage hands its output to the output side (for
		// parts it cuts the chunks).
		head = r.out.Push
		r.out.mergerCPU = r.src.cpu
		r.launchOutput()
	} else {
		n := job.Region.Channels
		outs := make([]*ring.SPSC[*core.Batch], n)
		for c := range outs {
			var in input
			if r.x != nil {
				bi, err := r.input(c, job.EventTime.MaxOutOfOrder)
				if err != nil {
					return err
				}
				in = bi
			} else {
				in = r.splitter.input(c)
			}
			var err error
			if outs[c], err = r.newRing(); err != nil {
				return err
			}
			if err = r.startChannel(c, n, in, outs[c], r.startWM, nil); err != nil {
				return err
			}
		}
		if r.x != nil {
			r.x.mu.Lock() // channels at the end of the input read it (endBarrier)
			r.mergerOuts = outs
			r.x.mu.Unlock()
		} else {
			r.mergerOuts = outs
		}
		r.wg.Add(1)
		mcpu := r.newStageCPU("merger", 0)
		r.placer.Start("merger", 0, func() {
			defer r.wg.Done()
			defer r.recoverStage("merger", 0)
			mcpu.begin()
			defer mcpu.end()
			r.out.mergerCPU = mcpu
			newMergeStage(r, outs, mcpu).loop()
		})
		r.launchOutput()
	}
	if r.ck != nil {
		r.ckRunning = true
		go r.ck.run(r.log.Info, r.log.Warn)
	}
	if r.x != nil {
		r.x.launchWorkers()
		return nil
	}
	if head == nil {
		head = r.splitter.route
	}
	r.src.launch(head)
	return nil
}

// teardown is the one way a run ends. startErr is an error from build or
// launch (nil once every stage started): it stops whatever started. Then it
// waits for every stage, closes every operator instance not yet closed,
// commits or aborts the sink, closes the error policy and the source, and
// reports.
func (r *run) teardown(startErr error) (*Report, error) {
	job := r.job
	if startErr != nil {
		r.fail(startErr)
		r.cancelRings()
	}
	r.wg.Wait()
	if r.ckRunning {
		close(r.ck.acks)
		<-r.ck.done
	}
	r.procCPU.Store(int64(sched.ProcessCPU() - r.procCPU0))
	err := r.firstErr()
	if cerr := r.closeAll(); err == nil && cerr != nil {
		err = cerr
	}
	if r.sinkOpen {
		if err == nil && r.ck != nil {
			// The job completed: its checkpoints go before the output is
			// finalised (a crash in between leaves no checkpoint and no
			// final file, and a fresh run redoes the job; the other order
			// could leave checkpoints whose output parts are gone).
			if cerr := job.Checkpoint.Store.Clear(); cerr != nil {
				err = fmt.Errorf("remove checkpoints: %w", cerr)
			}
		}
		if err == nil {
			err = job.Sink.Close()
		} else {
			job.Sink.Abort()
		}
	}
	if cerr := job.Errors.Close(); err == nil {
		err = cerr
	}
	job.Source.Close()
	if startErr != nil {
		return nil, err
	}
	rep := r.report(time.Since(r.start))
	if err != nil && r.ctx.Err() != nil && errors.Is(err, context.Canceled) {
		rep.Interrupted = true
		err = fmt.Errorf("%w: stopped after %d records", ErrInterrupted, rep.RecordsIn)
	}
	return rep, err
}

// describeRow renders a record for a dead letter: its fields' text,
// comma-separated.
func describeRow(s *core.Schema, row []core.Value) string {
	var buf []byte
	for i, f := range s.Fields {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = core.AppendText(buf, f.Type, row[i])
	}
	return string(buf)
}

// buildController makes the region's own controller, if it has one.
func (r *run) buildController() error {
	var err error
	r.own, err = newStepper(r.job.Region)
	return err
}
