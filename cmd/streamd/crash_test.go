package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"streamd/internal/tier"
	"streamd/snapshot"
)

// TestMain lets the test binary stand in for streamd in child processes:
// with STREAMD_TEST_CHILD set it runs the CLI on its arguments and exits.
func TestMain(m *testing.M) {
	if os.Getenv("STREAMD_TEST_CHILD") != "" {
		os.Exit(run(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// child starts `streamd args…` as a separate process.
func child(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "STREAMD_TEST_CHILD=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// crashLoop runs a checkpointed job as a child process, SIGKILLs it at
// seeded random moments (some while a checkpoint is being written, as
// checkpoints come every 50 ms), restarts it with --restore latest (or
// afresh when no checkpoint exists yet), and finally lets it finish. It
// returns the output file, how long the runs took and how many runs
// restored from a checkpoint. A kill comes between 1/8 and 3/4 of span
// after a start (span: an uncrashed run's time, measured on this machine,
// so that the kills fall inside the runs of a slice or of the full data, on
// a quiet machine or a loaded one) — every other kill within 1/8 of span
// after the run's first completed checkpoint instead, so that restores
// happen.
func crashLoop(t *testing.T, job, out string, seed uint64, kills int, span time.Duration) ([]byte, time.Duration, int) {
	t.Helper()
	rnd := rand.New(rand.NewPCG(seed, 31))
	wrnd := rand.New(rand.NewPCG(seed, 37)) // output workers, apart from the kill schedule
	ckDir := filepath.Join(filepath.Dir(job), "ck")
	start := time.Now()
	crashes, restores, inside := 0, 0, 0
	for k := 0; ; k++ {
		// Each run reads with another number of source workers (a job
		// whose source cannot be split ignores it), also across live
		// channel changes (the odd seeds of TestKillRestoreExactlyOnce).
		args := []string{"run", job, "--quiet", "--source-parallelism", fmt.Sprint(1 + rnd.IntN(4))}
		// And with 0 to 3 output workers: the checkpoint barriers pass
		// through them to the writer.
		if k := wrnd.IntN(4); k > 0 {
			args = append(args, "--output-workers", fmt.Sprint(k))
		}
		if hasCheckpoint(ckDir) {
			args = append(args, "--restore", "latest")
			restores++
			if insideBlock(ckDir) {
				inside++
			}
		}
		cmd := child(t, args...)
		if k < kills {
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			// Every other kill waits for a checkpoint to exist first, so
			// that restores happen however fast or slow the machine is;
			// the others fall anywhere, also before the first checkpoint.
			wait := span/8 + time.Duration(rnd.Int64N(int64(span*3/4-span/8)+1))
			if k%2 == 0 {
				for !hasCheckpoint(ckDir) && len(done) == 0 {
					time.Sleep(time.Millisecond)
				}
				wait = time.Duration(rnd.Int64N(int64(span/8) + 1))
			}
			time.Sleep(wait)
			cmd.Process.Signal(syscall.SIGKILL)
			if err := <-done; err == nil {
				break // it finished before the kill
			}
			crashes++
			continue
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("seed %d: final run %v: %v: %s", seed, args, err, cmd.Stderr.(*bytes.Buffer).String())
		}
		break
	}
	took := time.Since(start)
	if kills > 0 {
		t.Logf("%s, seed %d: %d of %d kills crashed a run, %d restores (%d inside a source block), %s", filepath.Base(out), seed, crashes, kills, restores, inside, took.Round(time.Millisecond))
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	return b, took, restores
}

// insideBlock says whether the newest complete checkpoint in dir was taken
// by source workers inside a block (its position has records of the
// block: docs/ARCHITECTURE.md, "Checkpoint barrier").
func insideBlock(dir string) bool {
	ms, _ := filepath.Glob(filepath.Join(dir, "chk-*", snapshot.MetadataFile))
	var newest *snapshot.Checkpoint
	for _, m := range ms {
		if c, err := snapshot.Load(filepath.Dir(m), nil); err == nil && (newest == nil || c.Meta.ID > newest.Meta.ID) {
			newest = c
		}
	}
	return newest != nil && newest.Meta.Sources["block_records"] > 0
}

// hasCheckpoint says whether a completed checkpoint is in dir.
func hasCheckpoint(dir string) bool {
	entries, _ := filepath.Glob(filepath.Join(dir, "chk-*"))
	return len(entries) > 0
}

// Crash schedules (seeded; the seed is in the failure message so it can be
// replayed): the flights job, a generator job over 1 M keys (writing
// CSV, and Parquet in fewer schedules) and a job over a CSV file, each killed
// several times, restored at random channel counts, source parallelisms
// and numbers of output workers; the final output equals
// an uncrashed run's byte for byte. The fast tier runs 2 schedules for the
// flights and the generator job (seed 1 with live channel changes, seed 2
// with rebalance steps), 2 for the CSV and the Parquet job and 1 for local
// aggregation, on a slice of the flights (flightsFile) and 200 K generated
// records; the long tier 10 (5 for the last three) on the 3 M flights and
// 600 K records. Longer crash loops:
// scripts/crashloop.sh (scripts/test-long.sh).
func TestKillRestoreExactlyOnce(t *testing.T) {
	data := dataDir(t)
	example, err := os.ReadFile(filepath.Join(repoRoot(t), "examples", "flights", "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	flights := withFlightsFile(t, string(example), flightsFile(t, data))
	flights = strings.Replace(flights, "${STREAMD_DATA:-../../../shared/data}", data, -1)
	flights = strings.Replace(flights, "${STREAMD_OUT:-out}", "out", 1)
	flights = strings.Replace(flights, "  channels: 4\n", "  channels: %d\n", 1)
	flights += "checkpoint: {dir: ck, interval: 10ms, retain: 2}\n"
	gen := `name: gen1m
source:
  generator: {seed: 5, count: COUNT, keys: 1000000, distribution: uniform, step: 1ms}
event_time: {field: ts}
region:
  channels: %d
  key_by: [key]
  ELASTIC
  ops:
    - window:
        size: 2m
        aggregates: {n: count, total: sum(value), top: max(value)}
checkpoint: {dir: ck, interval: 10ms, retain: 2}
sink:
  csv: {path: out/out.csv}
`
	gen = strings.Replace(gen, "COUNT", fmt.Sprint(tier.Pick(200_000, 600_000)), 1)
	// A CSV file of 1 MiB blocks, event times going back now and then.
	csvIn := filepath.Join(t.TempDir(), "in.csv")
	var sb strings.Builder
	sb.WriteString("seq,key,value,ts\n")
	crnd := rand.New(rand.NewPCG(7, 7))
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range tier.Pick(150_000, 500_000) {
		at = at.Add(time.Duration(crnd.IntN(20)) * time.Millisecond)
		ts := at
		if crnd.IntN(50) == 0 {
			ts = ts.Add(-time.Duration(crnd.IntN(90)) * time.Second)
		}
		fmt.Fprintf(&sb, "%d,k%05d,%d,%s\n", i, crnd.IntN(20_000), crnd.IntN(1000), ts.Format(time.RFC3339Nano))
	}
	if err := os.WriteFile(csvIn, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	csvJob := strings.Replace(gen, "  generator: {seed: 5, count: "+fmt.Sprint(tier.Pick(200_000, 600_000))+", keys: 1000000, distribution: uniform, step: 1ms}\nevent_time: {field: ts}",
		"  csv: {path: "+csvIn+", columns: {seq: int64, key: string, value: int64, ts: timestamp}}\nevent_time: {field: ts, max_out_of_orderness: 5s}", 1)
	if csvJob == gen {
		t.Fatal("the CSV job was not made")
	}
	schedules := tier.Pick(2, 10)
	for _, c := range []struct {
		name, text, out string
		schedules       int
	}{
		{"flights", flights, "out/flights-hourly.csv", schedules},
		{"gen1m", gen, "out/out.csv", schedules},
		// A CSV file read by source workers in byte-range blocks: restores
		// inside a block re-read it from the block's start.
		{"csv", csvJob, "out/out.csv", tier.Pick(2, 5)},
		// The Parquet sink: parts per epoch, copied into one file at the end.
		{"gen1m-parquet", strings.Replace(gen, "csv: {path: out/out.csv}", "parquet: {path: out/out.parquet, row_group_size: 5000}", 1), "out/out.parquet", tier.Pick(2, 5)},
		// Local-global aggregation: partials folded before the splitter,
		// none in flight at a barrier.
		{"gen1m-local", strings.Replace(gen, "        size: 2m\n", "        size: 2m\n        local_aggregation: on\n", 1), "out/out.csv", tier.Pick(1, 5)},
	} {
		dir := t.TempDir()
		job := filepath.Join(dir, "job.yaml")
		os.WriteFile(job, []byte(strings.Replace(fmt.Sprintf(c.text, 2), "  ELASTIC\n", "", 1)), 0o644)
		base, span, _ := crashLoop(t, job, filepath.Join(dir, c.out), 0, 0, 0)
		restored := 0
		for seed := uint64(1); seed <= uint64(c.schedules); seed++ {
			dir := t.TempDir()
			job := filepath.Join(dir, "job.yaml")
			text := fmt.Sprintf(c.text, 1+int(seed%4))
			// Odd seeds: crashes during live channel changes too; even
			// ones: during rebalance steps (key groups moved between the
			// channels every 2 source batches, checkpoints recording the
			// rebalanced table).
			el := fmt.Sprintf("  rebalance: {random_every: 2, seed: %d}\n", seed)
			if seed%2 == 1 {
				el = fmt.Sprintf("  elastic: {random_every: 3, seed: %d, max_channels: 6}\n", seed)
			}
			os.WriteFile(job, []byte(strings.Replace(text, "  ELASTIC\n", el, 1)), 0o644)
			got, _, n := crashLoop(t, job, filepath.Join(dir, c.out), seed, 1+int(seed%3), span)
			if !bytes.Equal(got, base) {
				t.Fatalf("%s, crash schedule seed %d: output differs from the uncrashed run (%d vs %d bytes)", c.name, seed, len(got), len(base))
			}
			restored += n
		}
		if restored == 0 {
			t.Fatalf("%s: no run was restored from a checkpoint in %d crash schedules: the kills came too early", c.name, c.schedules)
		}
	}
}
