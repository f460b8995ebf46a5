package jobfile

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"streamd/core/runtime"
)

// Records that share an input position (the elements of an exploded
// array on one line) are split over channels by key; when several of them
// are late their dead letters must still come out in input order, the
// same for any channel count and source parallelism. Before the channels'
// dead letters carried the records' sequence numbers, ties at one
// position were broken by the channels' progress and arrival order.
func TestSharedPositionDeadLettersInOrder(t *testing.T) {
	var in strings.Builder
	rnd := rand.New(rand.NewPCG(3, 9))
	for line := range 3000 {
		in.WriteString(`{"rs":[`)
		for e := range 6 {
			ts := line * 10
			if rnd.IntN(8) == 0 {
				ts = max(0, ts-400-rnd.IntN(400)) // past the bound: late
			}
			if e > 0 {
				in.WriteString(",")
			}
			fmt.Fprintf(&in, `{"ts":%d,"k":"k%d","v":%d}`, ts, (line*7+e*13)%23, e)
		}
		in.WriteString("]}\n")
	}
	run := func(m, n int) string {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "in.jsonl"), in.String())
		text := fmt.Sprintf("on_error: dead_letter\ndead_letter_path: dead.jsonl\nsource:\n  parallelism: %d\n  jsonl: {path: in.jsonl, explode: rs, fields: {ts: int64, k: string, v: int64}}\n", max(m, 0)) +
			"event_time: {field: ts, unit: ms, max_out_of_orderness: 100ms}\n" +
			"region:\n  key_by: [k]\n  ops:\n    - window: {size: 50ms, late: dead_letter, aggregates: {n: count, s: sum(v)}}\n" +
			"sink:\n  csv: {path: out.csv}\n"
		job := buildJobFile(t, dir, text, Options{Channels: n})
		if m < 0 {
			job.SourceParallelism = -1
		}
		if _, err := runtime.Run(context.Background(), job); err != nil {
			t.Fatal(err)
		}
		dead, err := os.ReadFile(filepath.Join(dir, "dead.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		return readFile(t, filepath.Join(dir, "out.csv")) + "--- dead letters\n" + string(dead)
	}
	want := run(-1, 1)
	if c := strings.Count(want, "late: its windows have fired"); c < 500 {
		t.Fatalf("only %d late records in the reference", c)
	}
	for _, mn := range [][2]int{{-1, 3}, {1, 2}, {2, 3}, {3, 5}} {
		if got := run(mn[0], mn[1]); got != want {
			t.Fatalf("source parallelism %d, %d channels: output or dead letters differ from one channel's", mn[0], mn[1])
		}
	}
}
