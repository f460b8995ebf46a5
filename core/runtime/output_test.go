package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"streamd/core"
	"streamd/core/ops"
	"streamd/core/runtime"
	"streamd/core/sink"
	"streamd/snapshot"
)

// outputJob is the exchange's window job with post-region operators (a
// filter and a map, so that workers drop and reshape records) and a CSV
// file sink.
func outputJob(t *testing.T, path string, m, n, k int) *runtime.Job {
	t.Helper()
	job, _ := exchangeJob(t, newBlockSource(outOfOrder(30_000, 300, 8), 4), m, n, 60e9, 0, "")
	in := job.Region.Ops[0].Out
	keep, err := ops.Filter("keep", "n > 1", in, job.Errors)
	if err != nil {
		t.Fatal(err)
	}
	shape, err := ops.Map("shape", []ops.MapField{{Name: "mean", Expr: "total / n"}}, true, in, job.Errors)
	if err != nil {
		t.Fatal(err)
	}
	job.Post = []core.OperatorDef{keep, shape}
	job.Sink = sink.CSV(path, sink.CSVOptions{Header: true})
	job.OutputParallelism = k
	return job
}

// With output workers the file is byte for byte the one the merger writes
// alone, for 1, 2, 3 and 8 workers, with any source parallelism and
// channel count; the post-region operators' counters add up the same.
func TestOutputWorkersKeepOutput(t *testing.T) {
	dir := t.TempDir()
	run := func(m, n, k int) ([]byte, *runtime.Report) {
		path := filepath.Join(dir, fmt.Sprintf("out-%d-%d-%d.csv", m, n, k))
		rep, err := runtime.Run(context.Background(), outputJob(t, path, m, n, k))
		if err != nil {
			t.Fatalf("%d workers, %d channels, %d output workers: %v", m, n, k, err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b, rep
	}
	want, wantRep := run(-1, 1, -1)
	if bytes.Count(want, []byte("\n")) < 1000 {
		t.Fatalf("reference output has %d lines", bytes.Count(want, []byte("\n")))
	}
	for _, c := range [][3]int{{1, 1, 1}, {2, 3, 2}, {3, 2, 3}, {8, 8, 8}, {-1, 2, 2}} {
		got, rep := run(c[0], c[1], c[2])
		if !bytes.Equal(got, want) {
			t.Fatalf("%v: output differs (%d vs %d bytes)", c, len(got), len(want))
		}
		if rep.RecordsOut != wantRep.RecordsOut || fmt.Sprint(rep.Operators) != fmt.Sprint(wantRep.Operators) {
			t.Fatalf("%v: %d out, operators %v; want %d, %v", c, rep.RecordsOut, rep.Operators, wantRep.RecordsOut, wantRep.Operators)
		}
		outputs, writers := 0, 0
		for _, s := range rep.Stages {
			switch s.Stage {
			case "output":
				outputs++
			case "writer":
				writers++
			}
		}
		// A file takes the workers' bytes at their offsets: no writer.
		if outputs != c[2] || writers != 0 {
			t.Fatalf("%v: %d output stages and %d writers reported", c, outputs, writers)
		}
	}
	// A sink that cannot take positional writes (standard output) gets
	// the bytes in order from the writer stage: the same bytes.
	for _, k := range []int{-1, 3} {
		var buf bytes.Buffer
		job := outputJob(t, filepath.Join(dir, "unused.csv"), 2, 3, k)
		var err error
		if job.Sink, err = sink.Stdout("csv", &buf, sink.CSVOptions{Header: true}); err != nil {
			t.Fatal(err)
		}
		rep, err := runtime.Run(context.Background(), job)
		if err != nil {
			t.Fatal(err)
		}
		writers := 0
		for _, s := range rep.Stages {
			if s.Stage == "writer" {
				writers++
			}
		}
		if !bytes.Equal(buf.Bytes(), want) || (k > 0) != (writers == 1) {
			t.Fatalf("stdout, %d output workers: %d bytes (want %d), %d writers", k, buf.Len(), len(want), writers)
		}
	}
}

// A post-region operator failing in an output worker stops the job: the
// error is the job's, every stage returns (goleak), no file appears.
func TestOutputWorkerError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.csv")
	job := outputJob(t, path, 2, 2, 3)
	fail := core.OperatorDef{Name: "fail", Out: job.Post[1].Out, New: func(core.Env) (core.Operator, error) { return &failAfter{n: 5}, nil }}
	job.Post = append(job.Post, fail)
	_, err := runtime.Run(context.Background(), job)
	if err == nil || !strings.Contains(err.Error(), "operator exploded") {
		t.Fatalf("error %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("output file after a failure: %v", err)
	}
}

// Exactly-once file output with output workers: the CSV job above,
// checkpointed, crashed three times (a source worker fails at a random
// block) and restored each time with another source parallelism, channel
// count and number of output workers (none, 1, 2 or 3), writes the file an
// uncrashed run without checkpoints or workers writes, byte for byte. Each
// restore checks the kept epoch parts against the checkpoint's manifest,
// which the writer took at the barrier: a part holding more or less than
// what was written before the barrier fails the restore.
func TestOutputWorkersExactlyOnce(t *testing.T) {
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.csv")
	if _, err := runtime.Run(context.Background(), outputJob(t, ref, -1, 1, -1)); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(ref)
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed <= 2; seed++ {
		rnd := rand.New(rand.NewPCG(seed, 43))
		store, err := snapshot.Open(t.TempDir(), 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, fmt.Sprintf("out-%d.csv", seed))
		var restore *snapshot.Checkpoint
		crashes, restores, workers := 0, 0, 0
		for attempt := 0; ; attempt++ {
			m, n, k := 1+rnd.IntN(3), 1+rnd.IntN(3), rnd.IntN(4)
			if k == 0 {
				k = -1
			} else {
				workers++
			}
			job := outputJob(t, path, m, n, k)
			src := job.Source.(*blockSource)
			start := 0
			if restore != nil {
				start = int(restore.Meta.Sources["block"])
			}
			if attempt < 3 && start+2 < src.Blocks() {
				job.Source = &crashBlocks{blockSource: src, crashAt: start + 2 + rnd.IntN(src.Blocks()-start-2)}
			}
			job.Checkpoint = &runtime.Checkpointing{Store: store, EveryBatches: 1 + rnd.IntN(3), Restore: restore}
			_, err := runtime.Run(context.Background(), job)
			if err == nil {
				break
			}
			if !errors.Is(err, errCrash) {
				t.Fatalf("seed %d attempt %d (%d workers, %d channels, %d output workers): %v", seed, attempt, m, n, k, err)
			}
			crashes++
			c, _, lerr := store.Latest()
			switch {
			case errors.Is(lerr, snapshot.ErrNoCheckpoint):
				restore = nil
			case lerr != nil:
				t.Fatal(lerr)
			default:
				restore = c
				restores++
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("seed %d after %d crashes: output differs (%d vs %d bytes)", seed, crashes, len(got), len(want))
		}
		if crashes < 2 || restores == 0 || workers == 0 {
			t.Fatalf("seed %d: %d crashes, %d restores, %d runs with output workers", seed, crashes, restores, workers)
		}
	}
}

// Placement counts the output stages Run starts: K workers, and a writer
// unless they write at offsets (a file without checkpoints) or are parts.
func TestOutputStages(t *testing.T) {
	dir := t.TempDir()
	stdout, err := sink.Stdout("csv", io.Discard, sink.CSVOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		sink core.Sink
		ck   bool
		want int
	}{
		{"file", sink.CSV(filepath.Join(dir, "a.csv"), sink.CSVOptions{}), false, 3},
		{"file with checkpoints", sink.CSV(filepath.Join(dir, "b.csv"), sink.CSVOptions{}), true, 4},
		{"stdout", stdout, false, 4},
		{"parts", sink.CSVParts(filepath.Join(dir, "p"), 5, sink.CSVOptions{}), false, 5},
	} {
		job := outputJob(t, filepath.Join(dir, "unused.csv"), 2, 2, 3)
		job.Sink = c.sink
		if c.ck {
			job.Checkpoint = &runtime.Checkpointing{}
		}
		if got := runtime.OutputStages(job); got != c.want {
			t.Errorf("%s: %d output stages, want %d", c.name, got, c.want)
		}
	}
}

// rejectRows fails (on_error: fail) on window rows whose total is a
// multiple of mod, naming the row; worker 0's instance is slow, so that
// another worker meets a later bad row first. The delay only makes the old
// race likely; the test's assertion holds at any timing.
type rejectRows struct {
	core.Base
	env core.Env
	mod int64
}

func (o *rejectRows) Process(in *core.Batch, out *core.Emitter) error {
	if o.env.Channel == 0 {
		time.Sleep(2 * time.Millisecond)
	}
	w := in.Schema.Width()
	for i := 0; i < in.Len; i++ {
		row := in.Vals[i*w : (i+1)*w]
		if total := row[4].Int(); total%o.mod == 0 {
			if err := o.env.Errors.Bad("reject", 0, "", fmt.Errorf("row %s %d has total %d", row[2].Str(), row[1].Time(), total)); err != nil {
				return err
			}
		}
	}
	return out.Emit(in)
}

// Under on_error: fail a post-region operator in output workers fails the
// job on the first bad row in the merger's order, as the merger stage
// alone does, for any number of workers.
func TestOutputWorkersFailOnFirstBadRow(t *testing.T) {
	dir := t.TempDir()
	run := func(k int) error {
		job := outputJob(t, filepath.Join(dir, fmt.Sprintf("out-%d.csv", k)), 2, 2, k)
		return runRejecting(t, job, 211)
	}
	want := run(-1)
	if want == nil || !strings.Contains(want.Error(), "reject: row ") {
		t.Fatalf("merger alone: %v", want)
	}
	for _, k := range []int{2, 3, 5} {
		if got := run(k); got == nil || got.Error() != want.Error() {
			t.Fatalf("%d output workers: %v, want %v", k, got, want)
		}
	}
}

// runRejecting runs job under the fail policy with a post-region operator
// that fails every record whose total (field 4) is a multiple of mod
// (rejectRows), and
// returns Run's error.
func runRejecting(t *testing.T, job *runtime.Job, mod int64) error {
	t.Helper()
	errs, err := core.NewErrorPolicy(core.Fail, "")
	if err != nil {
		t.Fatal(err)
	}
	job.Errors = errs
	in := job.Region.Ops[0].Out
	job.Post = []core.OperatorDef{{Name: "reject", Out: in, New: func(env core.Env) (core.Operator, error) {
		return &rejectRows{env: env, mod: mod}, nil
	}}}
	_, err = runtime.Run(context.Background(), job)
	return err
}
