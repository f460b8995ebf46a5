package runtime

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"streamd/core"
	"streamd/core/plan"
	"streamd/kvstate"
	"streamd/snapshot"
)

// barrierInfo travels with the copies of one barrier. The source stage
// fills the replay position and watermark, the splitter the table and
// channel count; it is read-only afterwards.
type barrierInfo struct {
	epoch    uint64
	position int64
	// block, with source workers (exchange.go), is the block the barrier
	// sits in: every record of blocks < block and the first record
	// records of block are before it, none after; block -1 for the single
	// source stage.
	block, record int64
	maxTime       int64 // the largest event time seen (watermark generator state)
	// inPiece, for a barrier a source worker sends between two pieces of
	// a source batch (cut.go), says that pieceMax is the largest event
	// time of the block up to that batch's end, which maxTime takes.
	inPiece  bool
	pieceMax int64
	// batchRecords, for a barrier between two pieces of a source batch
	// (cut.go), is how many of the batch's records come before it
	// (metadata source key "batch_records"): a restore by the single
	// source stage drops them from the batch it reads (SkipInBatch).
	batchRecords int64
	// maxTimes, for a union, is each input's largest event time
	// (inputTimes.String); "" otherwise.
	maxTimes string
	wm       int64
	// updates is the changes of logic in force at the barrier (JSON
	// []UpdateRecord; "" when none), recorded as metadata extra "updates".
	updates string
	// state is a core.Resumer source's ResumeState at the barrier ("" for
	// other sources), recorded as metadata extra "source_state".
	state    string
	table    *kvstate.Table
	channels int
	started  time.Time
	// tail, for a barrier source workers' channels place after the end of
	// the input, is its index among those (exchange.endBarrier).
	tail int
	// req, for a checkpoint the control plane asked for with source
	// workers, is the request answered when a worker sends the barrier
	// (its sequence number and position are known then: sendBarrier),
	// wait the channel the coordinator reports its end on; nil otherwise.
	req  *ctlRequest
	wait <-chan error
}

type ckptAck struct {
	info    *barrierInfo
	channel int                 // -1: the sink
	files   map[string][][]byte // file name → its parts, in order
	err     error
	// snaps are the copy-on-write snapshots whose blocks are among files:
	// released once the checkpoint is written (or fails), so that their
	// operators write the next snapshot into the same buffers. An
	// abandoned checkpoint's acks are dropped unreleased: its blocks are
	// left to the garbage collector.
	snaps []*core.GroupSnapshot
}

// checkpointer coordinates checkpoints: one in flight at a time.
type checkpointer struct {
	cfg       Checkpointing
	ops       []core.OperatorDef // region operators, for file names
	keyGroups int
	epoch     uint64 // last barrier injected (source stage only)
	batches   int
	last      atomic.Int64 // when the last checkpoint ended, ns
	inFlight  atomic.Bool
	flight    atomic.Uint64 // the epoch in flight
	flightAt  atomic.Int64  // when its barrier was injected, ns
	committed atomic.Uint64 // newest complete checkpoint
	started   atomic.Int64  // barriers injected
	acks      chan ckptAck
	done      chan struct{}

	mu        sync.Mutex
	completed int64
	timeouts  int64
	failures  int64 // checkpoints that could not be written; the job goes on
	// Bounded histograms, each with its own lock (off c.mu, which the
	// report takes): checkpoint durations, the channels' snapshot pauses,
	// copy-on-write stalls (GroupSnapshot.ObserveStalls).
	durations, pauses, stalls durationHist

	// waiters are the control plane's requests for a checkpoint
	// (control.go), by epoch: registered before the barrier is injected,
	// answered when the checkpoint completes (nil), fails or times out.
	waitMu  sync.Mutex
	waiters map[uint64]chan error
}

// await registers a waiter for epoch e, before its barrier is injected.
func (c *checkpointer) await(e uint64) <-chan error {
	ch := make(chan error, 1)
	c.waitMu.Lock()
	if c.waiters == nil {
		c.waiters = map[uint64]chan error{}
	}
	c.waiters[e] = ch
	c.waitMu.Unlock()
	return ch
}

// notify answers epoch e's waiter, if it has one.
func (c *checkpointer) notify(e uint64, err error) {
	c.waitMu.Lock()
	ch := c.waiters[e]
	delete(c.waiters, e)
	c.waitMu.Unlock()
	if ch != nil {
		ch <- err
	}
}

func newCheckpointer(cfg Checkpointing, ops []core.OperatorDef, groups int) *checkpointer {
	c := &checkpointer{cfg: cfg, ops: ops, keyGroups: groups, acks: make(chan ckptAck, 1024), done: make(chan struct{})}
	c.last.Store(c.now())
	if cfg.Restore != nil {
		c.epoch = cfg.Restore.Meta.ID
		c.committed.Store(c.epoch)
	}
	return c
}

// due says whether the source stage should inject a barrier now.
func (c *checkpointer) due() bool {
	c.batches++
	if c.inFlight.Load() {
		return false
	}
	if c.cfg.EveryBatches > 0 {
		return c.batches%c.cfg.EveryBatches == 0
	}
	return c.cfg.Interval > 0 && c.now()-c.last.Load() >= int64(c.cfg.Interval)
}

// dueByClock says whether a barrier is due by the clock alone, without
// counting a batch: after the source's input ended, and between the
// batches of source workers, on Interval only (EveryBatches counts the
// source stage's batches, or the workers' block starts, in due). Cheap:
// an atomic load, and a clock read when no checkpoint is in flight.
func (c *checkpointer) dueByClock() bool {
	return !c.inFlight.Load() && c.cfg.EveryBatches <= 0 && c.cfg.Interval > 0 && c.now()-c.last.Load() >= int64(c.cfg.Interval)
}

// now reads the clock Interval and Timeout are measured by, ns.
func (c *checkpointer) now() int64 {
	if c.cfg.Now != nil {
		return c.cfg.Now().UnixNano()
	}
	return time.Now().UnixNano()
}

// begin marks epoch e in flight (source stage).
func (c *checkpointer) begin(e uint64) {
	c.flight.Store(e)
	c.flightAt.Store(c.now())
	c.inFlight.Store(true)
	c.started.Add(1)
}

// startCheckpoint starts the next checkpoint, on whichever source path
// places its barrier: the next epoch, in flight from now (begin), and the
// barrier's info with what every barrier records from the start (the
// changes of logic in force); the caller adds the position.
func (r *run) startCheckpoint() *barrierInfo {
	r.ck.epoch++
	r.ck.begin(r.ck.epoch)
	return &barrierInfo{epoch: r.ck.epoch, started: time.Now(), updates: r.updatesText}
}

// barrierMarker is the Barrier marker of checkpoint info, stamped stamp
// (its entry time, ns); info belongs to the checkpoint once the marker is
// pushed.
func barrierMarker(info *barrierInfo, stamp int64) *core.Batch {
	m := core.NewMarker(core.Barrier)
	m.Epoch, m.Stamp, m.Control = info.epoch, stamp, info
	return m
}

func (c *checkpointer) end() {
	c.last.Store(c.now())
	c.inFlight.Store(false)
}

// run collects acknowledgements and writes checkpoints until the acks
// channel is closed.
func (c *checkpointer) run(log, warn func(msg string, args ...any)) {
	defer close(c.done)
	pending := map[uint64][]ckptAck{}
	abandoned := map[uint64]bool{}
	var tick <-chan time.Time
	if c.cfg.Timeout > 0 {
		t := time.NewTicker(max(c.cfg.Timeout/4, time.Millisecond))
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-tick:
			e := c.flight.Load()
			if c.inFlight.Load() && c.now()-c.flightAt.Load() > int64(c.cfg.Timeout) && !abandoned[e] {
				abandoned[e] = true
				delete(pending, e)
				c.mu.Lock()
				c.timeouts++
				c.mu.Unlock()
				warn("checkpoint timed out", "epoch", e, "timeout", c.cfg.Timeout)
				c.notify(e, fmt.Errorf("checkpoint %d timed out after %s", e, c.cfg.Timeout))
				c.end()
			}
			continue
		case a, ok := <-c.acks:
			if !ok {
				return
			}
			e := a.info.epoch
			if abandoned[e] {
				continue
			}
			pending[e] = append(pending[e], a)
			acks := pending[e]
			if len(acks) < a.info.channels+1 { // every channel and the sink
				continue
			}
			delete(pending, e)
			err := c.write(acks)
			for _, a := range acks {
				for _, gs := range a.snaps {
					gs.Release()
				}
			}
			// The next interval starts before the counts move: whoever
			// sees a checkpoint counted (Live.Snapshot) sees its end.
			c.end()
			if err != nil {
				warn("checkpoint failed", "epoch", e, "err", err)
				c.mu.Lock()
				c.failures++
				c.mu.Unlock()
				c.notify(e, fmt.Errorf("checkpoint %d failed: %w", e, err))
			} else {
				c.committed.Store(e)
				d := time.Since(a.info.started)
				c.mu.Lock()
				c.completed++
				c.durations.record(d)
				c.mu.Unlock()
				log("checkpoint", "epoch", e, "duration", d, "position", PositionText(a.info.sources()))
				c.notify(e, nil)
			}
		}
	}
}

// sources is the checkpoint metadata's source position for info
// (snapshot.Metadata.Sources): "source" (records before the barrier; 0
// when source workers cannot count them: PositionText), and "block",
// "block_records" and "batch_records" where they apply.
func (info *barrierInfo) sources() map[string]int64 {
	sources := map[string]int64{"source": info.position}
	if info.batchRecords > 0 { // absent: at a batch's end
		sources[batchRecords] = info.batchRecords
	}
	if info.block >= 0 {
		sources["block"] = info.block
		if info.record > 0 { // absent: at the block's start (all that older checkpoints record)
			sources[blockRecords] = info.record
		}
	}
	return sources
}

func (c *checkpointer) write(acks []ckptAck) error {
	info := acks[0].info
	w, err := c.cfg.Store.Begin(info.epoch)
	if err != nil {
		return err
	}
	var names []string
	for _, a := range acks {
		if a.err != nil {
			w.Abort()
			return a.err
		}
		for name, parts := range a.files {
			if err := w.WriteParts(name, parts); err != nil {
				w.Abort()
				return err
			}
			names = append(names, name)
		}
	}
	sort.Strings(names)
	ops, states := make([]string, len(c.ops)), make([]string, len(c.ops))
	for i, d := range c.ops {
		ops[i], states[i] = d.Name, d.State
	}
	sources := info.sources()
	extra := map[string]string{"max_event_time": fmt.Sprint(info.maxTime), "source": c.cfg.Source, "sink": c.cfg.Sink}
	if info.maxTimes != "" {
		extra["max_event_times"] = info.maxTimes
	}
	var owners []int
	if info.table != nil {
		owners = info.table.Owners()
	}
	if info.state != "" {
		extra["source_state"] = info.state
	}
	if info.updates != "" {
		extra[UpdatesExtra] = info.updates
	}
	return w.Commit(snapshot.Metadata{
		Sources: sources, Owners: owners,
		Operators: ops, OperatorStates: states, KeyGroups: c.keyGroups, Channels: info.channels, Watermark: info.wm,
		Extra: extra,
	})
}

// ErrCheckpointMismatch is plan.ErrCheckpointMismatch.
//
// Deprecated: use plan.ErrCheckpointMismatch.
var ErrCheckpointMismatch = plan.ErrCheckpointMismatch

// CheckRestore is plan.CheckRestore.
func CheckRestore(meta *snapshot.Metadata, cfg *Checkpointing, reg *Region) error {
	return plan.CheckRestore(meta, cfg, reg)
}

// VerifyOutput is plan.VerifyOutput.
//
// Deprecated: use plan.VerifyOutput.
func VerifyOutput(s core.Sink, ck *snapshot.Checkpoint) error { return plan.VerifyOutput(s, ck) }

// startTable is the key-group table a keyed region of groups key groups
// starts with on n channels: the restored checkpoint's table (resized to
// n when it was taken at another channel count: kvstate.Table.Resize), or
// jump hashing. nil for a stateless region (keyed false).
func startTable(restore *snapshot.Checkpoint, keyed bool, groups, n int) *kvstate.Table {
	if !keyed {
		return nil
	}
	if restore != nil && len(restore.Meta.Owners) == groups {
		if t, err := kvstate.NewAssigned(restore.Meta.Owners, restore.Meta.Channels); err == nil { // checked by checkRestore
			return t.Resize(n)
		}
	}
	return kvstate.NewTable(groups, n)
}

// stateFile names operator i's state file from channel c.
func stateFile(i, c int) string { return fmt.Sprintf("op%03d-ch%04d", i, c) }

// restoreChannel loads, into channel c's instances, the key groups c owns
// under table from every state file of the checkpoint.
func restoreChannel(ck *snapshot.Checkpoint, insts []instance, table *kvstate.Table, c int) error {
	owns := func(g int) bool { return table == nil || table.Owner(g) == c }
	for i, in := range insts {
		sn, ok := in.op.(core.Snapshotter)
		if !ok {
			continue
		}
		prefix := fmt.Sprintf("op%03d-", i)
		for _, f := range ck.Meta.Files {
			if !strings.HasPrefix(f.Name, prefix) {
				continue
			}
			data, err := ck.ReadFile(f.Name)
			if err != nil {
				return err
			}
			if err := sn.RestoreGroups(data, owns); err != nil {
				return fmt.Errorf("restore %s: %w", in.def.Name, err)
			}
		}
	}
	return nil
}

// snapshotChannel takes channel c's state at a barrier and sends the
// acknowledgement: copy-on-write operators start their snapshot and are
// serialised in the background (the ack goes when they are done), others
// are serialised here, on the data path.
//
// stall, if not nil, is told of each copy-on-write stall the channel
// goroutine will see (GroupSnapshot.ObserveStalls).
func snapshotChannel(info *barrierInfo, insts []instance, c int, acks chan<- ckptAck, wg *sync.WaitGroup, stall func(time.Duration)) {
	a := ckptAck{info: info, channel: c, files: map[string][][]byte{}}
	var groups []int
	if info.table != nil {
		groups = info.table.Owned(c)
	}
	cow := map[string]*core.GroupSnapshot{}
	for i, in := range insts {
		if as, ok := in.op.(core.AsyncSnapshotter); ok {
			gs := as.BeginSnapshot(groups)
			if stall != nil {
				gs.ObserveStalls(stall)
			}
			cow[stateFile(i, c)] = gs
			continue
		}
		sn, ok := in.op.(core.Snapshotter)
		if !ok {
			continue
		}
		data, err := sn.SnapshotGroups(nil, groups)
		if err != nil {
			a.err = fmt.Errorf("snapshot %s: %w", in.def.Name, err)
			break
		}
		a.files[stateFile(i, c)] = [][]byte{data}
	}
	if len(cow) == 0 || a.err != nil {
		acks <- a
		return
	}
	wg.Add(1) // the job closes acks only after this send
	go func() {
		defer wg.Done()
		for name, gs := range cow {
			a.files[name] = gs.Parts()
			a.snaps = append(a.snaps, gs)
		}
		acks <- a
	}()
}

func (c *checkpointer) pause(d time.Duration) { c.pauses.record(d) }

// stall records a copy-on-write stall (called on channel goroutines).
func (c *checkpointer) stall(d time.Duration) { c.stalls.record(d) }

// sinkCheckpoint runs on the sink's goroutine (the inline output worker's
// last step, on the merger or the source stage, or the writer with output
// workers) for every batch or item, before its records are written: it
// commits epochs the coordinator completed, and at a barrier tells the
// sink and acknowledges.
func (r *run) sinkCheckpoint(b *core.Batch) error {
	es, _ := r.job.Sink.(core.EpochSink)
	if c := r.ck.committed.Load(); c > r.sinkEpoch && es != nil {
		if err := es.Commit(c); err != nil {
			return err
		}
		r.sinkEpoch = c
	}
	if b.Kind != core.Barrier || barrierOf(b) == nil {
		return nil
	}
	// Every dead letter of a record before the barrier — the source
	// stage's, the channels', the post chain's — is written by now: make
	// them durable before the checkpoint can complete, since a restore
	// skips those records without handling them again (ErrorPolicy.Mute).
	err := r.job.Errors.Sync()
	if err == nil && es != nil {
		err = es.Barrier(barrierOf(b).epoch)
	}
	ack := ckptAck{info: barrierOf(b), channel: -1, err: err}
	if om, ok := es.(core.OutputManifest); ok && err == nil {
		if m := om.Manifest(); m != nil {
			ack.files = map[string][][]byte{core.OutputManifestFile: {m}}
		}
	}
	r.ck.acks <- ack
	return err
}

// barrierOf is the checkpoint a Barrier marker carries (nil for any other
// batch, and for a barrier injected without the coordinator, in tests).
func barrierOf(b *core.Batch) *barrierInfo {
	bi, _ := b.Control.(*barrierInfo)
	return bi
}
