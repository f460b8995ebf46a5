package runtime

import "streamd/core"

// regionLoad is what a policy's snapshot (policy.go, read) takes of the region's input
// once per period: arrived, the data records its splitters have taken to
// route since the job started (pre-region operators applied; with source
// workers, summed over every worker's splitter), and backlog, the records
// waiting in front of the channels' operators now: routed but not yet
// processed by a channel (in a ring, in a splitter's blocked push, or in
// the batch a channel works on), plus the source's lag where it reports
// one (core.Lagging: a rate-limited generator's records due but not sent).
//
// It costs no per-record work: the splitters count records per batch
// (splitter.routed) and the channels already count what they processed;
// the difference is taken here. The channels' counts are read first: a
// record is routed before it is processed, so the routed count read after
// them is never smaller. The source's lag is read only when lag is set:
// by the single source stage itself (Lag's contract), where the region's
// own controller takes its snapshots.
func (r *run) regionLoad(lag bool) (arrived, backlog uint64) {
	var processed uint64
	for c := range r.chanStats {
		processed += uint64(r.chanStats[c].Records.Load())
	}
	for _, sp := range r.allSplitters() {
		arrived += sp.routed.Load()
	}
	backlog = arrived - min(processed, arrived)
	if lag && r.x == nil {
		if l := lagOf(r.job.Source); l != nil {
			backlog += uint64(max(0, l.Lag()))
		}
	}
	return arrived, backlog
}

// lagOf is src's lag reporter, looking through the checkpoints' wrapper;
// nil if it has none.
func lagOf(src core.Source) core.Lagging {
	if rp, ok := src.(*core.Replayable); ok {
		src = rp.Source
	}
	l, _ := src.(core.Lagging)
	return l
}
