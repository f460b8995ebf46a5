package jobfile

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"streamd/core"
	"streamd/core/runtime"
	"streamd/internal/tier"
)

// calendarInput is a CSV file of 110,000 keyed records from October to
// December 2026 (across the Europe/Paris autumn change), about 2.5 MB (3
// blocks): the local date in a Go layout and the seconds since local
// midnight, some records out of order (some past the bound: late), and
// malformed ones (a date that does not exist, a bad int64).
func calendarInput() string {
	paris, _ := time.LoadLocation("Europe/Paris")
	var b strings.Builder
	b.WriteString("day,secs,k,v\n")
	rnd := rand.New(rand.NewPCG(7, 3))
	base := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	for i := range 110_000 {
		t := base.Add(time.Duration(i) * 64 * time.Second)
		if rnd.IntN(30) == 0 {
			t = t.Add(-time.Duration(rnd.IntN(7200)) * time.Second)
		}
		switch i % 4999 {
		case 100:
			b.WriteString("31/02/2026,10,k1,1\n")
		case 200:
			b.WriteString("01/11/2026,ten,k1,1\n")
		}
		l := t.In(paris)
		midnight := time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, paris)
		fmt.Fprintf(&b, "%s,%d,k%d,%d\n", l.Format("02/01/2006"), int(t.Sub(midnight)/time.Second), i%13, i%100)
	}
	return b.String()
}

// The determinism contract with calendar windows and event time from an
// expression: daily windows in Europe/Paris (one of 25 hours) over a CSV
// file read by 1, 2, 3 and 8 source workers and 1 and 3 channels give
// byte-identical output and dead letters, and the same counts, as the
// single source stage (the whole grid in the long tier, four pairs across
// it in the fast one).
func TestCalendarWindowSameOutput(t *testing.T) {
	text := calendarInput()
	run := func(m, n int) (string, *runtime.Report) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "in.csv"), text)
		par := ""
		if m > 0 {
			par = fmt.Sprintf("  parallelism: %d\n", m)
		}
		job := "on_error: dead_letter\ndead_letter_path: dead.jsonl\nsource:\n" + par +
			"  csv: {path: in.csv, columns: {day: {type: timestamp, format: \"02/01/2006\", time_zone: Europe/Paris}, secs: int64, k: string, v: int64}}\n" +
			"event_time: {expr: 'day + duration(\"1s\") * secs', max_out_of_orderness: 1h}\n" +
			"region:\n  key_by: [k]\n  ops:\n    - window: {size: 1d, time_zone: Europe/Paris, aggregates: {n: count, s: sum(v), hi: max(v)}}\n" +
			"sink:\n  csv: {path: out.csv}\n"
		jb := buildJobFile(t, dir, job, Options{Channels: n})
		if sp, ok := jb.Source.(core.Splittable); !ok || sp.Blocks() < 3 {
			t.Fatalf("%T: not read by blocks (%d bytes)", jb.Source, len(text))
		}
		if m < 0 {
			jb.SourceParallelism = -1 // the single source stage
		}
		rep, err := runtime.Run(context.Background(), jb)
		if err != nil {
			t.Fatalf("%d workers, %d channels: %v", m, n, err)
		}
		dead, err := os.ReadFile(filepath.Join(dir, "dead.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		return readFile(t, filepath.Join(dir, "out.csv")) + "--- dead letters\n" + strings.ReplaceAll(string(dead), dir, "$DIR"), rep
	}
	want, wantRep := run(-1, 1)
	if wantRep.Late == 0 || wantRep.DeadLetters != 44 || wantRep.RecordsIn != 110_000 {
		t.Fatalf("single source stage: %d late, %d dead letters, %d records in", wantRep.Late, wantRep.DeadLetters, wantRep.RecordsIn)
	}
	// The day the clocks go back has 25 hours of records (up to lateness).
	if !strings.Contains(want, "2026-10-24T22:00:00Z,2026-10-25T23:00:00Z,") {
		t.Fatalf("no 25-hour window in\n%.600s", want)
	}
	// The fast tier runs each worker count and each channel count once,
	// the long one the whole grid.
	grid := [][2]int{{1, 1}, {2, 3}, {3, 1}, {8, 3}}
	if tier.Long() {
		grid = nil
		for _, m := range []int{1, 2, 3, 8} {
			for _, n := range []int{1, 3} {
				grid = append(grid, [2]int{m, n})
			}
		}
	}
	for _, mn := range grid {
		{
			m, n := mn[0], mn[1]
			got, rep := run(m, n)
			if got != want || rep.Late != wantRep.Late || rep.DeadLetters != wantRep.DeadLetters || rep.RecordsIn != wantRep.RecordsIn {
				t.Fatalf("%d workers, %d channels: %d late, %d dead letters, %d in (single stage %d, %d, %d); output equal: %v",
					m, n, rep.Late, rep.DeadLetters, rep.RecordsIn, wantRep.Late, wantRep.DeadLetters, wantRep.RecordsIn, got == want)
			}
		}
	}
}
