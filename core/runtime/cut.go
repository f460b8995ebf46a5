package runtime

import "streamd/core"

// Pieces (docs/ARCHITECTURE.md, "Pieces: the rings bounded in records"). Debloating bounds each splitter ring in slots, at
// least its floor (debloatMin), and a slot holds a batch of up to
// core.BatchSize records: in front of an operator slow per record, the
// floor's slots alone can take many times the buffer target, and a
// barrier waits behind them and behind the rest of the source batch
// being routed. So a splitter's debloater also counts the records and
// data slots it pushes to each ring (tally), its controllers fit the
// channel's cost per slot and per record and decide a piece per channel
// (debloat.Controller.Piece), and the stage that reads the source cuts
// each source batch, after event time is admitted and before the
// pre-region operators, into pieces that give each channel about that
// many records (cutSize). A barrier may go between two pieces
// (pushPieces): it then waits for one piece, not the whole batch.
//
// What a piece changes is only where data batches end between two
// markers: the watermark candidate still follows the whole source batch,
// admitted whole (the max_ahead median, the largest event time), so each
// channel sees the same records, watermarks and markers in the same
// order. A barrier between pieces records the largest event time of the
// whole batch (a restore drops the batch's records before the barrier
// and reads the rest: the watermark after the batch is the same, and so
// is every later one). Without backpressure nothing is measured and
// nothing is cut.

// cutSize is the most records a source batch about to be routed by s
// may hold before it is cut (0: never): the smallest piece decided for
// any of its channels (or s.force), times the channel count when the
// batch is scattered by key over several channels (each takes about its
// share). A nil splitter (no region) never cuts.
func (s *splitter) cutSize() int {
	if s == nil {
		return 0
	}
	least := s.force
	if least == 0 && s.db != nil {
		for c := range min(len(s.rings), len(s.db.pieces)) {
			if p := int(s.db.pieces[c].Load()); p > 0 && (least == 0 || p < least) {
				least = p
			}
		}
	}
	if n := len(s.rings); s.table != nil && n > 1 {
		return least * n
	}
	return least
}

// pushPieces hands data batch b (more than k records) to push in pieces
// of k records, the last of the rest, calling between after each piece
// but the last with the number of b's records that follow it (a barrier
// may go there). The first piece is b, cut to its first k records; the
// others are copies. It takes ownership of b.
func pushPieces(b *core.Batch, k int, push func(*core.Batch) error, between func(rest int) error) error {
	var pieces [core.BatchSize / pieceLeast]*core.Batch
	ps := pieces[:0]
	for lo := k; lo < b.Len; lo += k {
		p := core.NewBatch(b.Schema)
		p.Stamp = b.Stamp
		p.AppendRange(b, lo, min(lo+k, b.Len))
		ps = append(ps, p)
	}
	rest := b.Len - k
	b.Truncate(k)
	err := push(b)
	for i, p := range ps {
		if err == nil {
			err = between(rest)
		}
		if err == nil {
			rest -= p.Len
			err = push(p)
		} else {
			p.Release()
		}
		ps[i] = nil
	}
	return err
}
