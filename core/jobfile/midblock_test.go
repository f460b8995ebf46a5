package jobfile

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"streamd/core"
	"streamd/core/runtime"
	"streamd/internal/tier"
	"streamd/snapshot"
)

// scriptClock is a checkpoint clock (Checkpointing.Now) the test moves.
type scriptClock struct{ ns atomic.Int64 }

func (c *scriptClock) now() time.Time { return time.Unix(0, c.ns.Load()) }

// scriptedBlocks wraps a source read by source workers: just before batch
// dueBatch of block dueBlock it moves the checkpoint clock past the
// interval, so that a checkpoint comes due inside that block; reading
// block crashAt, it waits until a checkpoint is counted and then fails
// the run (a crash after that checkpoint).
type scriptedBlocks struct {
	core.Splittable
	clock              *scriptClock
	step               time.Duration
	dueBlock, dueBatch int
	crashAt            int
	committed          func() bool
}

func (s *scriptedBlocks) ReadBlock(ctx context.Context, b int, errs *core.ErrorPolicy, emit func(*core.Batch) error) error {
	if b == s.crashAt {
		for !s.committed() {
			if err := ctx.Err(); err != nil {
				return err
			}
			time.Sleep(time.Millisecond) // waits for other goroutines, not for time
		}
		return errCrash
	}
	i := 0
	return s.Splittable.ReadBlock(ctx, b, errs, func(bt *core.Batch) error {
		if b == s.dueBlock && i == s.dueBatch {
			s.clock.ns.Add(int64(s.step))
		}
		i++
		return emit(bt)
	})
}

// scriptedCounted is a scriptedBlocks over a source that knows where its
// blocks start (core.BlockStarts).
type scriptedCounted struct{ *scriptedBlocks }

func (s scriptedCounted) BlockStart(b int) int64 {
	return s.Splittable.(core.BlockStarts).BlockStart(b)
}

// midBlockInputs writes the inputs of the mid-block restore test into dir
// and returns the source sections of a job reading each: a generator, a
// CSV file (3 blocks of 1 MiB) and a Parquet file (row groups of 5,000
// rows: 10 batches), the files holding event times that go back now and
// then (late records).
func midBlockInputs(t *testing.T, dir string) map[string]string {
	t.Helper()
	rnd := rand.New(rand.NewPCG(8, 8))
	var sb strings.Builder
	sb.WriteString("seq,key,value,ts\n")
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; sb.Len() < 2600<<10; i++ {
		ts = ts.Add(time.Duration(rnd.IntN(20)) * time.Millisecond)
		at := ts
		if rnd.IntN(50) == 0 {
			at = at.Add(-time.Duration(rnd.IntN(90)) * time.Second)
		}
		fmt.Fprintf(&sb, "%d,k%03d,%d,%s\n", i, rnd.IntN(300), rnd.IntN(1000), at.Format(time.RFC3339Nano))
	}
	writeFile(t, filepath.Join(dir, "in.csv"), sb.String())
	columns := "columns: {seq: int64, key: string, value: int64, ts: timestamp}"
	pq := buildJobFile(t, dir, "source:\n  csv: {path: in.csv, "+columns+"}\nsink:\n  parquet: {path: in.parquet, row_group_size: 5000}\n", Options{})
	if _, err := runtime.Run(context.Background(), pq); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"generator": "generator: {seed: 4, count: 60000, keys: 300, step: 7ms}",
		"csv":       "csv: {path: in.csv, " + columns + "}",
		"parquet":   "parquet: {path: in.parquet}",
	}
}

// Kill and restore inside a block: a keyed window job over a
// generator, a CSV file and a Parquet file, read by 1, 2 or 4 source
// workers into 1 or 3 channels, takes a checkpoint that comes due inside
// block 1 (the scripted clock moves there; with rings of 4 batches every
// block before it has been read by then, so the barrier goes into block
// 1, between two batches), fails right after it, and is restored with
// other worker and channel counts: the output file is byte-identical to
// the uninterrupted run's, and the checkpoint is at a record of block 1.
func TestRestoreInsideBlock(t *testing.T) {
	dir := t.TempDir()
	inputs := midBlockInputs(t, dir)
	job := func(src string) string {
		return "source:\n  " + src + "\nevent_time: {field: ts, max_out_of_orderness: 5s}\nruntime: {ring_size: 4}\n" +
			"region:\n  channels: 1\n  key_by: [key]\n  ops:\n    - window: {size: 1m, aggregates: {n: count, total: sum(value), hi: max(value)}}\n" +
			"sink:\n  csv: {path: out.csv}\ncheckpoint: {dir: ck, interval: 1m}\n"
	}
	type mn struct{ m, n int }
	runs := tier.Pick([]mn{{1, 3}, {2, 1}, {4, 3}}, []mn{{1, 1}, {1, 3}, {2, 1}, {2, 3}, {4, 1}, {4, 3}})
	for _, kind := range []string{"generator", "csv", "parquet"} {
		text := job(inputs[kind])
		ref := buildJobFile(t, dir, strings.Replace(text, "checkpoint: {dir: ck, interval: 1m}\n", "", 1), Options{SourceParallelism: 1})
		if _, err := runtime.Run(context.Background(), ref); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		want := readFile(t, filepath.Join(dir, "out.csv"))
		for i, c := range runs {
			name := fmt.Sprintf("%s, %d workers, %d channels", kind, c.m, c.n)
			os.RemoveAll(filepath.Join(dir, "ck"))
			os.Remove(filepath.Join(dir, "out.csv"))
			j := buildJobFile(t, dir, text, Options{SourceParallelism: c.m, Channels: c.n})
			clock := &scriptClock{}
			j.Checkpoint.Now = clock.now
			var live atomic.Pointer[runtime.Live]
			onStart := runtime.OnStart(func(l runtime.Live) { live.Store(&l) })
			sb := &scriptedBlocks{Splittable: j.Source.(core.Splittable), clock: clock, step: time.Minute, dueBlock: 1, dueBatch: 6, crashAt: 2,
				committed: func() bool { l := live.Load(); return l != nil && l.Snapshot().Checkpoints > 0 }}
			j.Source = sb
			if _, ok := sb.Splittable.(core.BlockStarts); ok {
				j.Source = scriptedCounted{sb}
			}
			if _, err := runtime.Run(context.Background(), j, onStart); err == nil || !strings.Contains(err.Error(), errCrash.Error()) {
				t.Fatalf("%s: the crashing run: %v", name, err)
			}
			ck, err := snapshot.Load(newestCheckpoint(t, filepath.Join(dir, "ck")), nil)
			if err != nil {
				t.Fatal(err)
			}
			if b, r := ck.Meta.Sources["block"], ck.Meta.Sources["block_records"]; b != 1 || r == 0 {
				t.Fatalf("%s: checkpoint at block %d, %d records in; want inside block 1", name, b, r)
			}
			// Restore with other counts: workers 4 → 1 → 2 → 4 …, channels 1 ↔ 3.
			m2, n2 := []int{2, 4, 1}[i%3], 4-c.n
			j2 := buildJobFile(t, dir, text, Options{SourceParallelism: m2, Channels: n2, Restore: "latest"})
			j2.Checkpoint.Now = clock.now
			if _, err := runtime.Run(context.Background(), j2); err != nil {
				t.Fatalf("%s: restored with %d workers, %d channels: %v", name, m2, n2, err)
			}
			if got := readFile(t, filepath.Join(dir, "out.csv")); got != want {
				t.Fatalf("%s: restored at block 1, record %d, with %d workers and %d channels: output differs (%d bytes vs %d)",
					name, ck.Meta.Sources["block_records"], m2, n2, len(got), len(want))
			}
		}
	}
}

// newestCheckpoint is the directory of the newest complete checkpoint in
// ck.
func newestCheckpoint(t *testing.T, ck string) string {
	t.Helper()
	ms, _ := filepath.Glob(filepath.Join(ck, "*", snapshot.MetadataFile))
	best, id := "", uint64(0)
	for _, m := range ms {
		if c, err := snapshot.Load(filepath.Dir(m), nil); err == nil && c.Meta.ID > id {
			best, id = filepath.Dir(m), c.Meta.ID
		}
	}
	if best == "" {
		t.Fatalf("no checkpoint in %s", ck)
	}
	return best
}
