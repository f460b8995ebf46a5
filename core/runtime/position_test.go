package runtime_test

import (
	"testing"

	"streamd/core/runtime"
)

// PositionText shows the record count where the checkpoint knows it, and
// the block and its records where it does not (source workers past block
// 0 of a CSV or JSON-lines file), never a bare 0 there.
func TestPositionText(t *testing.T) {
	for _, c := range []struct {
		sources map[string]int64
		want    string
	}{
		{map[string]int64{"source": 0}, "0"},                                                       // the input's start
		{map[string]int64{"source": 1234}, "1234"},                                                 // the single source stage
		{map[string]int64{"source": 1234, "batch_records": 12}, "1234"},                            // between two pieces of a batch
		{map[string]int64{"source": 300, "block": 0, "block_records": 300}, "300"},                 // inside block 0: counted
		{map[string]int64{"source": 16684, "block": 2, "block_records": 300}, "16684"},             // Parquet, a generator: counted
		{map[string]int64{"source": 0, "block": 1, "block_records": 492}, "block 1 + 492 records"}, // CSV, JSON lines
		{map[string]int64{"source": 0, "block": 5, "block_records": 1}, "block 5 + 1 record"},
		{map[string]int64{"source": 0, "block": 3}, "block 3 + 0 records"}, // at block 3's start, or the end of 3 blocks
	} {
		if got := runtime.PositionText(c.sources); got != c.want {
			t.Errorf("PositionText(%v) = %q, want %q", c.sources, got, c.want)
		}
	}
}
