package plan

import (
	"fmt"
	"strconv"
)

// PositionText is a checkpoint's source position (snapshot.Metadata.Sources)
// as people read it, the same in the run's log, in `streamd checkpoints
// list` and in the restore message:
//
//   - "1234": the checkpoint follows the first 1234 records of the input,
//     when it knows that count (the single source stage; source workers
//     over a source that knows where its blocks start, core.BlockStarts:
//     Parquet, a generator; any checkpoint inside block 0);
//   - "block 1 + 492 records": a checkpoint taken by source workers in
//     block b ≥ 1 of a source that does not count the records before a
//     block (CSV, JSON lines: its blocks are byte ranges). The metadata's
//     "source" is 0 then, which is not where a restore resumes: it resumes
//     after every record of blocks 0 … b-1 and the first 492 records of
//     block b (metadata keys "block" and "block_records").
//
// "batch_records" (a barrier between two pieces of a batch) changes how a
// restore re-batches the records, not where it resumes, and is not shown.
func PositionText(sources map[string]int64) string {
	pos := sources["source"]
	b, ok := sources["block"]
	if !ok || b <= 0 || pos != 0 {
		return strconv.FormatInt(pos, 10)
	}
	n := sources["block_records"]
	if n == 1 {
		return fmt.Sprintf("block %d + 1 record", b)
	}
	return fmt.Sprintf("block %d + %d records", b, n)
}
