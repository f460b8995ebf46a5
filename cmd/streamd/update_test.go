package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"sync/atomic"
	"testing"

	"streamd/core"
	"streamd/core/jobfile"
	"streamd/core/runtime"
	"streamd/internal/tier"
)

// postJob is a keyed job whose post-region operators (pf, a filter, and
// pm, a map) run in the output workers; sink is the sink's entry. Its
// 250,000 records (600,000 in the long tier) leave room for a dozen
// commands: each takes effect at a block boundary of the source, and on a
// loaded 2-core machine the last of twelve landed before record 360,000
// of 600,000; the tests pass with fewer (a command the ended job answers
// 503 ends the loop).
func postJob(dir, name, pfExpr, pmExpr, sink, extra string) string {
	return fmt.Sprintf(`name: %s
source:
  generator:
    seed: 7
    keys: 300
    step: 1ms
    start: 2026-01-01T00:00:00Z
    count: %d
region:
  channels: 2
  key_by: [key]
  elastic:
    policy: off
    max_channels: 4
  ops:
    - name: keep
      filter: "value < 950"
post:
  - name: pf
    filter: %q
  - name: pm
    map:
      d: %q
sink:
%s
%s`, name, tier.Pick(250_000, 600_000), pfExpr, pmExpr, fmt.Sprintf(sink, filepath.Join(dir, name)), extra)
}

// Updates of post-region operators run by output workers: every worker
// replaces its instance at the same place in the merger's order, so that a
// seeded random stream of updates (and channel changes) sent over HTTP
// gives byte for byte the output of a run without control whose
// expressions switch at the reported positions — with the workers writing
// at offsets, with the writer stage (checkpoints), and with parts.
func TestUpdatePostWithOutputWorkers(t *testing.T) {
	for _, tc := range []struct {
		name, sink, extra string
		parts             bool
	}{
		{"positional", "  csv: {path: %s.csv}", "", false},
		{"writer", "  csv: {path: %s.csv}", "checkpoint: {dir: CK, interval: 1h}\n", false},
		{"parts", "  csv: {path: %s, parts: 2}", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			extra := string(bytes.ReplaceAll([]byte(tc.extra), []byte("CK"), []byte(filepath.Join(dir, "ck"))))
			job := filepath.Join(dir, "job.yaml")
			writeTestFile(t, job, postJob(dir, "live", "value % 3 != 0", "value * 2", tc.sink, extra))
			cr := startControlled(t, job, "--control-addr", "127.0.0.1:0", "--source-parallelism", "2", "--output-workers", "2")
			rnd := rand.New(rand.NewPCG(21, uint64(len(tc.name))))
			var pfAt, pmAt []int64
			var pfNext, pmNext []string
			updates := 0
		commands:
			for range 12 {
				var code int
				var r controlReply
				switch rnd.IntN(3) {
				case 0:
					code, r = post(t, cr.addr, "", "scale", "", fmt.Sprintf(`{"channels": %d}`, 1+rnd.IntN(4)))
				case 1:
					e := fmt.Sprintf("value %% %d != 0", 2+rnd.IntN(6))
					if code, r = post(t, cr.addr, "", "update", "operator=pf", "filter: "+e); code == http.StatusOK {
						pfAt, pfNext = append(pfAt, r.Outcome.Position), append(pfNext, e)
					}
				case 2:
					e := fmt.Sprintf("value * %d", 3+rnd.IntN(5))
					if code, r = post(t, cr.addr, "", "update", "operator=pm", fmt.Sprintf(`{"map": {"d": %q}}`, e)); code == http.StatusOK {
						pmAt, pmNext = append(pmAt, r.Outcome.Position), append(pmNext, e)
					}
				}
				switch {
				case code == http.StatusServiceUnavailable:
					break commands // the job has ended
				case code != http.StatusOK:
					t.Fatalf("command refused: %d %s", code, r.Error)
				case r.Outcome.Kind == runtime.KindUpdate:
					updates++
				}
			}
			if code := <-cr.done; code != 0 {
				t.Fatalf("controlled run: exit %d: %s", code, cr.stderr.String())
			}
			ref := filepath.Join(dir, "ref.yaml")
			writeTestFile(t, ref, postJob(dir, "ref", piecewise("value % 3 != 0", pfAt, pfNext), piecewise("value * 2", pmAt, pmNext), tc.sink, ""))
			if code, _, stderr := cli(t, "run", ref, "--quiet", "--output-workers", "1"); code != 0 {
				t.Fatalf("reference run: exit %d: %s", code, stderr)
			}
			names := []string{""}
			live, want := filepath.Join(dir, "live.csv"), filepath.Join(dir, "ref.csv")
			if tc.parts {
				names = []string{"part-00000.csv", "part-00001.csv"}
				live, want = filepath.Join(dir, "live"), filepath.Join(dir, "ref")
			}
			for _, n := range names {
				got, _ := os.ReadFile(filepath.Join(live, n))
				exp, _ := os.ReadFile(filepath.Join(want, n))
				if len(exp) == 0 || !bytes.Equal(got, exp) {
					t.Fatalf("%d updates (pf at %v, pm at %v): %s differs from the reference (%d vs %d bytes)", updates, pfAt, pfNext, n, len(got), len(exp))
				}
			}
			t.Logf("%d updates; pf switched at %v, pm at %v", updates, pfAt, pmAt)
		})
	}
}

// Updates of post-region operators without output workers: the merger
// runs the one output worker inline, which replaces its instance when the
// merger hands it the marker. A seeded random stream of updates, each sent
// once the job's output has grown since the last, gives byte for byte the
// output of a run with one output worker whose expressions switch at the
// reported positions.
func TestUpdatePostInline(t *testing.T) {
	dir := t.TempDir()
	job := filepath.Join(dir, "job.yaml")
	sink := "  csv: {path: %s.csv}"
	writeTestFile(t, job, postJob(dir, "live", "value % 3 != 0", "value * 2", sink, ""))
	f, err := jobfile.Load(job)
	if err != nil {
		t.Fatal(err)
	}
	j, err := f.Build(jobfile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	j.OutputParallelism = -1 // none: the inline worker
	var live runtime.Live
	var written atomic.Int64
	started := make(chan struct{})
	onStart := runtime.OnStart(func(l runtime.Live) { live = l; close(started) })
	j.OnSink = func(b *core.Batch) { written.Add(int64(b.Len)) }
	var pfAt, pmAt []int64
	var pfNext, pmNext []string
	sent := make(chan error, 1)
	go func() {
		<-started
		rnd := rand.New(rand.NewPCG(21, 5))
		for range 8 {
			for w := written.Load(); written.Load() == w; {
				goruntime.Gosched() // the job has gone on since the last update
			}
			op, e, body := "pf", "", ""
			if rnd.IntN(2) == 0 {
				e = fmt.Sprintf("value %% %d != 0", 2+rnd.IntN(6))
				body = "filter: " + e
			} else {
				op, e = "pm", fmt.Sprintf("value * %d", 3+rnd.IntN(5))
				body = fmt.Sprintf(`{"map": {"d": %q}}`, e)
			}
			def, err := f.BuildUpdate(j, op, []byte(body), "test")
			if err != nil {
				sent <- err
				return
			}
			out, err := live.Update(context.Background(), op, def, body, "test")
			switch {
			case errors.Is(err, runtime.ErrEnded):
				sent <- nil
				return
			case err != nil:
				sent <- err
				return
			case op == "pf":
				pfAt, pfNext = append(pfAt, out.Position), append(pfNext, e)
			default:
				pmAt, pmNext = append(pmAt, out.Position), append(pmNext, e)
			}
		}
		sent <- nil
	}()
	if _, err := runtime.Run(context.Background(), j, onStart); err != nil {
		t.Fatalf("live run: %v", err)
	}
	if err := <-sent; err != nil {
		t.Fatalf("update: %v", err)
	}
	if len(pfAt)+len(pmAt) == 0 {
		t.Fatal("no update reached the job")
	}
	ref := filepath.Join(dir, "ref.yaml")
	writeTestFile(t, ref, postJob(dir, "ref", piecewise("value % 3 != 0", pfAt, pfNext), piecewise("value * 2", pmAt, pmNext), sink, ""))
	if code, _, stderr := cli(t, "run", ref, "--quiet", "--output-workers", "1"); code != 0 {
		t.Fatalf("reference run: exit %d: %s", code, stderr)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "live.csv"))
	exp, _ := os.ReadFile(filepath.Join(dir, "ref.csv"))
	if len(exp) == 0 || !bytes.Equal(got, exp) {
		t.Fatalf("pf at %v %v, pm at %v %v: the output differs from the reference (%d vs %d bytes)", pfAt, pfNext, pmAt, pmNext, len(got), len(exp))
	}
	t.Logf("pf switched at %v, pm at %v", pfAt, pmAt)
}

// latenessJob is a keyed window with allowed lateness over generated
// records, one in 53 of which is up to 20 s late (event time from an
// expression): how many are added, fire their window again or are late
// depends on the lateness in force. Its 400,000 records (1,500,000 in the
// long tier) leave room for the ten commands of
// TestUpdateLatenessByteIdentical: on a loaded 2-core machine the last
// landed before record 190,000.
func latenessJob(dir, name, lateness string) string {
	return fmt.Sprintf(`name: %s
source:
  generator:
    seed: 7
    keys: 50
    step: 1ms
    start: 2026-01-01T00:00:00Z
    count: %d
event_time:
  expr: 'ts - duration("1ms") * ((seq * 7919) %% 53 == 0 ? seq %% 20000 : 0)'
  max_out_of_orderness: 100ms
region:
  channels: 2
  key_by: [key]
  elastic:
    policy: off
    max_channels: 4
  ops:
    - name: win
      window:
        size: 1s
        allowed_lateness: %s
        aggregates: {n: count, total: sum(value)}
sink:
  csv: {path: %s}
`, name, tier.Pick(400_000, 1_500_000), lateness, filepath.Join(dir, name+".csv"))
}

func latenessBody(l string) string {
	return fmt.Sprintf("window: {size: 1s, allowed_lateness: %s, aggregates: {n: count, total: sum(value)}}", l)
}

// gated is the reference run's source: before it hands over the batch
// that ends at the next position of at, it calls update(i) for that
// position, which queues update i; the single source stage then places it
// right after that batch, at exactly that position.
type gated struct {
	core.Source
	read   int64
	at     []int64
	i      int
	update func(i int)
	missed int64 // a position between two batches' boundaries (-1: none)
}

func (g *gated) Next(ctx context.Context) (*core.Batch, error) {
	b, err := g.Source.Next(ctx)
	if err != nil {
		return b, err
	}
	end := g.read + int64(b.Len)
	for g.i < len(g.at) && g.at[g.i] <= end {
		if g.at[g.i] != end {
			g.missed = g.at[g.i]
		}
		g.update(g.i)
		g.i++
	}
	g.read = end
	return b, nil
}

// A seeded random stream of updates of a window's allowed lateness (and
// channel changes), sent over HTTP to a job read by two source workers,
// gives byte for byte the output of a reference run — the single source
// stage, one channel — whose source stops at each reported position until
// that update is queued, so that it takes effect exactly there (old
// lateness for every record before the sync point, the new one after). A
// change of the window's size is refused, naming the field.
func TestUpdateLatenessByteIdentical(t *testing.T) {
	dir := t.TempDir()
	job := filepath.Join(dir, "job.yaml")
	writeTestFile(t, job, latenessJob(dir, "live", "5s"))
	cr := startControlled(t, job, "--control-addr", "127.0.0.1:0", "--source-parallelism", "2")
	code, r := post(t, cr.addr, "", "update", "operator=win", "window: {size: 2s, allowed_lateness: 5s, aggregates: {n: count, total: sum(value)}}")
	if code != http.StatusConflict || !bytes.Contains([]byte(r.Error), []byte("size (1s → 2s)")) {
		t.Errorf("window size update: %d %q, want 409 naming size", code, r.Error)
	}
	rnd := rand.New(rand.NewPCG(3, 9))
	var at []int64
	var next []string
	first := "5s"
commands:
	for range 10 {
		var code int
		var r controlReply
		var l string
		if rnd.IntN(3) == 0 {
			code, r = post(t, cr.addr, "", "scale", "", fmt.Sprintf(`{"channels": %d}`, 1+rnd.IntN(4)))
		} else {
			l = []string{"0s", "2s", "10s", "30s"}[rnd.IntN(4)]
			code, r = post(t, cr.addr, "", "update", "operator=win", latenessBody(l))
		}
		switch {
		case code == http.StatusServiceUnavailable:
			break commands
		case code != http.StatusOK:
			t.Fatalf("command refused: %d %s", code, r.Error)
		case r.Outcome.Kind == runtime.KindUpdate && r.Outcome.Position == 0:
			first = l // before any record: the reference starts with it
		case r.Outcome.Kind == runtime.KindUpdate:
			at, next = append(at, r.Outcome.Position), append(next, l)
		}
	}
	if code := <-cr.done; code != 0 {
		t.Fatalf("controlled run: exit %d: %s", code, cr.stderr.String())
	}
	if len(at) == 0 {
		t.Fatal("no update reached the job")
	}
	if !slices.IsSorted(at) {
		t.Fatalf("sync points out of order: %v", at)
	}

	// The reference.
	ref := filepath.Join(dir, "ref.yaml")
	writeTestFile(t, ref, latenessJob(dir, "ref", first))
	f, err := jobfile.Load(ref)
	if err != nil {
		t.Fatal(err)
	}
	j, err := f.Build(jobfile.Options{Channels: 1})
	if err != nil {
		t.Fatal(err)
	}
	j.SourceParallelism = -1
	var live runtime.Live
	started := make(chan struct{})
	onStart := runtime.OnStart(func(l runtime.Live) {
		live = l
		close(started)
	})
	type answer struct {
		i   int // the update's index: answers may come in any order
		out runtime.Outcome
		err error
	}
	answers := make(chan answer, len(at))
	g := &gated{Source: j.Source, at: at, missed: -1}
	g.update = func(i int) {
		<-started
		def, err := f.BuildUpdate(j, "win", []byte(latenessBody(next[i])), "test")
		if err != nil {
			answers <- answer{i: i, err: err}
			return
		}
		go func() {
			out, err := live.Update(context.Background(), "win", def, latenessBody(next[i]), "test")
			answers <- answer{i, out, err}
		}()
		for live.Queued() == 0 {
			goruntime.Gosched()
		}
	}
	j.Source = g
	if _, err := runtime.Run(context.Background(), j, onStart); err != nil {
		t.Fatalf("reference run: %v", err)
	}
	if g.missed >= 0 {
		t.Fatalf("position %d is not between two of the reference's batches", g.missed)
	}
	for range at {
		a := <-answers
		if a.err != nil || a.out.Position != at[a.i] {
			t.Fatalf("reference update %d: %+v %v, want position %d", a.i, a.out, a.err, at[a.i])
		}
	}
	got, _ := os.ReadFile(filepath.Join(dir, "live.csv"))
	want, _ := os.ReadFile(filepath.Join(dir, "ref.csv"))
	if len(want) == 0 || !bytes.Equal(got, want) {
		t.Fatalf("lateness %s, then %v at %v: output differs from the reference (%d vs %d bytes)", first, next, at, len(got), len(want))
	}
	// The updates matter: without them the output is another.
	flat := filepath.Join(dir, "flat.yaml")
	writeTestFile(t, flat, latenessJob(dir, "flat", first))
	if code, _, stderr := cli(t, "run", flat, "--quiet"); code != 0 {
		t.Fatalf("run without updates: exit %d: %s", code, stderr)
	}
	if same, _ := os.ReadFile(filepath.Join(dir, "flat.csv")); bytes.Equal(same, want) && !slices.Equal(next, slices.Repeat([]string{first}, len(next))) {
		t.Fatal("the lateness updates did not change the output: the test proves nothing")
	}
	t.Logf("lateness %s, then %v at %v", first, next, at)
}
