package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"streamd/core"
	"streamd/core/runtime"
	"streamd/core/source"
	"streamd/snapshot"
)

// A checkpoint inside an exploded array resumes exactly once: the input is
// one JSON document (a FeatureCollection-like {"features": [...]}) whose
// records are the elements of one array, so every checkpoint position
// falls inside it. Killed at random moments and restored from its newest
// checkpoint, the job gives the output of the uncrashed run, and the
// restored runs count only the malformed elements after their positions.
func TestCrashRestoreInsideExplodedArray(t *testing.T) {
	recs := genRecords(20000, 50, 7)
	want := expected(recs)
	var sb strings.Builder
	sb.WriteString("{\"type\": \"FeatureCollection\",\n \"features\": [\n")
	bad := 0
	for i, r := range recs {
		if i%41 == 3 {
			sb.WriteString("  {\"properties\": {\"k\": \"x\", \"v\": \"oops\", \"ts\": 1}},\n")
			bad++
		}
		fmt.Fprintf(&sb, "  {\"properties\": {\"k\": %q, \"v\": %d, \"ts\": %d}}", r.k, r.v, r.ts)
		if i < len(recs)-1 {
			sb.WriteString(",")
		}
		sb.WriteString("\n")
	}
	sb.WriteString(" ]}\n")
	path := filepath.Join(t.TempDir(), "in.json")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := source.JSONOptions{Explode: "features", Fields: []source.JSONField{
		{Field: core.Field{Name: "k", Type: core.String}, Path: "properties.k"},
		{Field: core.Field{Name: "v", Type: core.Int64}, Path: "properties.v"},
		{Field: core.Field{Name: "ts", Type: core.Timestamp}, Path: "properties.ts"},
	}}
	rnd := rand.New(rand.NewPCG(3, 99))
	store, err := snapshot.Open(t.TempDir(), 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	sink := &epochMem{}
	var restore *snapshot.Checkpoint
	restored := 0
	for attempt := 0; ; attempt++ {
		errs, _ := core.NewErrorPolicy(core.Skip, "")
		src, err := source.JSON(path, opts, nil, errs)
		if err != nil {
			t.Fatal(err)
		}
		job, err := windowJob(nil, 1+rnd.IntN(3), sink)
		if err != nil {
			t.Fatal(err)
		}
		job.Source, job.Errors, job.RingSize = src, errs, 4
		withOutputWorkers(job, sink, 0)
		job.Checkpoint = &runtime.Checkpointing{Store: store, EveryBatches: 1 + rnd.IntN(3), Restore: restore}
		if attempt < 3 {
			skipped := 0
			if restore != nil {
				skipped = int(restore.Meta.Sources["source"]/core.BatchSize) + 1
			}
			job.Source = &crashAfter{Source: src, n: skipped + 5 + rnd.IntN(15)}
		}
		rep, err := runtime.Run(context.Background(), job)
		if err == nil {
			if restore == nil || restore.Meta.Sources["source"] == 0 {
				t.Fatalf("never restored from a position inside the array")
			}
			// This run counted the malformed elements after its position.
			pos := int(restore.Meta.Sources["source"])
			n := 0
			for i := pos; i < len(recs); i++ {
				if i%41 == 3 {
					n++
				}
			}
			if rep.Skipped != int64(n) {
				t.Fatalf("restored at record %d: skipped %d malformed elements, want %d", pos, rep.Skipped, n)
			}
			break
		}
		if !errors.Is(err, errCrash) {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
		c, _, lerr := store.Latest()
		switch {
		case errors.Is(lerr, snapshot.ErrNoCheckpoint):
			restore, sink.parts = nil, nil
		case lerr != nil:
			t.Fatal(lerr)
		default:
			restore = c
			restored++
		}
	}
	if got := sink.lines(); !slices.Equal(got, want) {
		t.Fatalf("output differs: %s", diffAt(got, want))
	}
	_ = bad
}
