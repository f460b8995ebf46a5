package runtime

import (
	"errors"

	"streamd/core"
	"streamd/core/plan"
	"streamd/core/runtime/markers"
	"streamd/order"
	"streamd/ring"
)

// The merger stage (docs/ARCHITECTURE.md, "Splitter, channels, merger").

// mergeStage is the merger, the stage after the parallel region: it drains
// every channel's output ring into an order.Merger, which restores the
// one-channel order (sequence numbers, then the region's tie order) and
// releases each marker once every channel delivered it, and it carries
// out the merger's steps. The markers' protocol — which channel ended,
// what an aligned marker asks (hand on a barrier, end, switch channels)
// — is a markers.Aligner's, which the stage drives. Runs of records are assembled into output batches (gather.go) for
// post; an aligned marker goes on after the batch being built. One marker
// it acts on itself: a Reconfig switches it to the rings of the new
// channel set (rescale.go). The channels' dead letters are written as the
// merger emits the records they follow (letters.go). Without output
// workers (K = 0) post is the one output worker, which the merger runs
// inline on its goroutine: the post-region operators, their changes of
// logic and the sink's step are that worker's (output.go).
//
// Everything in it belongs to the merger's goroutine. It is written only
// at a Reconfig, and padded so that no other goroutine's data shares its
// cache lines.
type mergeStage struct {
	_ [core.CacheLine]byte
	r *run
	m *order.Merger[*core.Batch]
	// outs are the channels' output rings as of the merger's current
	// configuration (it learns of changes in-band, at a Reconfig); al
	// knows which of them ended (markers).
	outs []*ring.SPSC[*core.Batch]
	al   *markers.Aligner
	buf  []*core.Batch // drain's, for TryPopN
	// asm builds the output batches from runs; post takes them and the
	// markers.
	asm       assembler
	post      *output
	unordered bool // Region.Unordered: arrival order, markers still aligned
	sc        *stageCPU
	_         [core.CacheLine]byte
}

// newMergeStage makes the merger of outs, the channels' output rings,
// which hands its output to the output side (r.out); sc is its CPU
// account. Called on the merger's goroutine.
func newMergeStage(r *run, outs []*ring.SPSC[*core.Batch], sc *stageCPU) *mergeStage {
	post := r.out
	reg := r.job.Region
	n := len(outs)
	ms := &mergeStage{
		r:         r,
		m:         order.New[*core.Batch](n, !reg.Unordered, regionTie(reg.Ops)),
		outs:      outs,
		al:        markers.New(n),
		buf:       make([]*core.Batch, 64),
		post:      post,
		unordered: reg.Unordered,
		sc:        sc,
	}
	ms.asm = &copier{schema: r.regionOut, next: post}
	if post.workers() > 0 {
		ms.asm = &gatherer{schema: r.regionOut, next: post} // the workers fill the runs
	}
	return ms
}

// loop is the merger's goroutine until the End marker has gone on: it
// drains the rings, carries out every step the merger can take, hands on
// the batch being built, and parks on the doorbell when no ring gave it
// anything. A failure — its own, or a channel's ring stopping without End
// (someone else's) — stops it (stop).
func (ms *mergeStage) loop() {
	for {
		got, err := ms.drain()
		if errors.Is(err, errChannelStopped) {
			ms.stop(nil)
			return
		}
		end := false
		if err == nil {
			end, err = ms.steps()
		}
		if end {
			return
		}
		if err == nil {
			err = ms.asm.flush()
		}
		if err != nil {
			ms.stop(err)
			return
		}
		if !got {
			t0 := ms.sc.waitBegin()
			ms.r.bell.wait(ms.ready)
			ms.sc.waited(t0)
		}
	}
}

// errChannelStopped is drain's when a channel's ring stopped before its
// end (canceled, or closed and empty before its End): someone failed,
// and said so.
var errChannelStopped = errors.New("a channel stopped before its end")

// drain moves what every ring holds into the merger, without blocking:
// data with its sequence numbers and progress, a pulse's progress,
// markers (told to al) to align. got says a ring gave anything. Errors:
// errChannelStopped, or a marker out of order (markers).
func (ms *mergeStage) drain() (got bool, err error) {
	m, buf := ms.m, ms.buf
	for c, o := range ms.outs {
		k := o.TryPopN(buf)
		for _, b := range buf[:k] {
			got = true
			switch b.Kind {
			case core.Data:
				m.PushData(c, b, b.Seq[:b.Len], b.Progress)
			case core.Pulse:
				m.Progress(c, b.MarkSeq)
				b.Release()
			default:
				if err == nil {
					err = ms.al.Read(c, markerOf(b))
				}
				m.PushMarker(c, b, b.MarkSeq)
			}
		}
		clear(buf[:k])
		if err != nil {
			return got, err
		}
		if o.Canceled() || (k == 0 && o.Closed() && o.Len() == 0 && !ms.al.Ended(c)) {
			return got, errChannelStopped
		}
	}
	return got, nil
}

// markerOf is what the markers protocol knows of marker b.
func markerOf(b *core.Batch) markers.Marker {
	m := markers.Marker{Kind: markers.Pass, Seq: b.MarkSeq}
	switch b.Kind {
	case core.Barrier:
		m.Kind, m.Epoch = markers.Barrier, b.Epoch
	case core.End:
		m.Kind = markers.End
	case core.Reconfig:
		m.Kind, m.To = markers.Change, reconfOf(b).to
	}
	return m
}

// ready is the doorbell's condition: a ring has something for drain (a
// batch, a close before End, a cancel).
func (ms *mergeStage) ready() bool {
	for c, o := range ms.outs {
		if o.Len() > 0 || (o.Closed() && !ms.al.Ended(c)) || o.Canceled() {
			return true
		}
	}
	return false
}

// steps carries out, in order, every step the merger can take now: the
// dead letters up to it, then a run of records or an aligned marker
// (marker). end says the End marker went on: the stage is done.
func (ms *mergeStage) steps() (end bool, err error) {
	asm := ms.asm
	for {
		st, ok := ms.m.Next()
		if !ok {
			return false, nil
		}
		// The channels' dead letters up to here (letters.go).
		if done, ok := ms.lettersDone(&st); ok {
			if err = ms.r.letters.flush(done); err != nil {
				return false, err
			}
		}
		switch st.Kind {
		case order.Run:
			// Records st.From..st.To-1 of a channel's batch: a whole
			// batch that no other channel's records precede goes on by
			// pointer, after the batch being built; any other run is
			// assembled into output batches, and the channel's batch let
			// go once st.Done says the merger is finished with it.
			b := st.Batch
			switch {
			case st.From == st.To:
				asm.done(b) // an empty batch, or the empty end of one
			case st.From == 0 && st.To == b.Len && st.Done:
				if err = asm.flush(); err == nil {
					err = ms.post.Push(b)
				} else {
					b.Release()
				}
			default:
				err = asm.add(b, st.From, st.To)
				if st.Done {
					asm.done(b)
				}
			}
		case order.Marker:
			end, err = ms.marker(st.Markers)
		}
		if err != nil || end {
			return end, err
		}
	}
}

// lettersDone is how far step st lets the channels' dead letters be
// written (letters.go): up to its last record or its marker's sequence
// number; all of them (^0) at End or when the region is unordered; none
// (ok false) for an empty run.
func (ms *mergeStage) lettersDone(st *order.Step[*core.Batch]) (done uint64, ok bool) {
	switch {
	case ms.unordered || (st.Kind == order.Marker && st.Markers[0].Kind == core.End):
		return ^uint64(0), true
	case st.Kind == order.Marker:
		return st.Markers[0].MarkSeq, true
	case st.To > st.From:
		return st.Batch.Seq[st.To-1], true
	}
	return 0, false
}

// marker carries out a marker every channel has delivered, as al decides
// (markers.Aligner.Aligned): mks are the channels' copies, of which the
// first goes on and the others are released. A change switches the
// inputs (reconfig) and goes no further; any other marker goes on after
// the batch being built (a barrier to the sink's checkpoint step, an
// Update to the output workers, which change their post-region
// instances). end says it was End.
func (ms *mergeStage) marker(mks []*core.Batch) (end bool, err error) {
	mk := mks[0]
	for _, o := range mks[1:] {
		o.Release()
	}
	st, err := ms.al.Aligned(mk.MarkSeq)
	if err != nil {
		mk.Release()
		return false, err
	}
	if st.Kind == markers.Change {
		return false, ms.reconfig(mk)
	}
	end = st.Kind == markers.End
	if err = ms.asm.flush(); err != nil {
		mk.Release()
		return false, err
	}
	if err = ms.post.Push(mk); err != nil {
		return false, err
	}
	return end, nil
}

// reconfig switches the merger to the channels after a live change
// (rescale.go), at the Reconfig marker mk every channel of the old set is
// past; it takes ownership of mk. The batch being built goes on first.
func (ms *mergeStage) reconfig(mk *core.Batch) error {
	rc := reconfOf(mk)
	mk.Release()
	if err := ms.asm.flush(); err != nil {
		return err
	}
	ms.outs = rc.outs
	ms.m.Resize(len(ms.outs), rc.seq)
	return nil
}

// stop ends the stage on a failure: err (nil: someone else's, said
// already) fails the run; the rings from the channels and those to the
// output workers are canceled, so that the stages around stop too; the
// batch being built is dropped.
func (ms *mergeStage) stop(err error) {
	if err != nil {
		ms.r.fail(err)
	}
	for _, o := range ms.outs {
		o.Cancel()
	}
	for _, rg := range ms.post.in {
		rg.Cancel() // the output workers stop too
	}
	ms.asm.drop()
}

// regionTie is how the merger orders records of equal sequence numbers
// from different channels (a window's firing): by the order of the last
// region operator that has one (core.OperatorDef.Order: window end, then
// key), carried through the operators after it (core.CarryOrder: a
// filter, map, project or lookup that keeps those fields), so that the
// output is the one channel's order whatever the channel count. Nil (by
// channel index) when no operator has an order or one after it does not
// keep it (RegionOrderKept says so before the run).
func regionTie(ops []core.OperatorDef) order.Tie[*core.Batch] {
	last := plan.OrderedOp(ops)
	if last < 0 {
		return nil
	}
	if last == len(ops)-1 {
		cmp := ops[last].Order
		return func(a *core.Batch, i int, b *core.Batch, j int) int { return cmp(a.Row(i), b.Row(j)) }
	}
	by, ok := core.CarryOrder(ops[last].OrderBy, ops[last+1:])
	if !ok || len(ops[last].OrderBy) == 0 {
		return nil
	}
	return func(a *core.Batch, i int, b *core.Batch, j int) int { return core.CompareBy(by, a.Row(i), b.Row(j)) }
}
