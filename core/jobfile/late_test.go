package jobfile

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// lateInput is 600 flights, one a minute from midnight, alternating SFO
// and LAX, delay = minute % 7; then (line 602) one from minute 5, late by
// far more than max_out_of_orderness; then (line 603) one from minute 595,
// out of order but within the bound. Watermarks advance once per batch
// (512 records), so the late record is one batch behind the watermark.
func lateInput() string {
	var b strings.Builder
	b.WriteString("ts,origin,delay\n")
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	row := func(min int) {
		fmt.Fprintf(&b, "%s,%s,%d\n", t0.Add(time.Duration(min)*time.Minute).Format(time.RFC3339), []string{"SFO", "LAX"}[min%2], min%7)
	}
	for m := range 600 {
		row(m)
	}
	row(5)
	row(595)
	return b.String()
}

// lateOutput is the hourly count and delay sum per origin: the late record
// is not in it, the record within the bound is.
func lateOutput() string {
	var b strings.Builder
	b.WriteString("window_start,window_end,origin,flights,total_delay\n")
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for h := range 10 {
		for _, o := range []string{"LAX", "SFO"} {
			n, sum := 0, 0
			for m := h * 60; m < h*60+60; m++ {
				if []string{"SFO", "LAX"}[m%2] == o {
					n, sum = n+1, sum+m%7
				}
			}
			if h == 9 && o == "LAX" { // minute 595
				n, sum = n+1, sum+595%7
			}
			fmt.Fprintf(&b, "%s,%s,%s,%d,%d\n", t0.Add(time.Duration(h)*time.Hour).Format(time.RFC3339),
				t0.Add(time.Duration(h+1)*time.Hour).Format(time.RFC3339), o, n, sum)
		}
	}
	return b.String()
}

func TestLateRecords(t *testing.T) {
	for _, c := range []struct {
		late     string
		channels int
		dead     []deadLetter
	}{
		{"drop", 1, nil},
		{"drop", 3, nil},
		{"dead_letter", 2, []deadLetter{{"region.ops[0].window", 602, "late: its windows have fired", "2024-01-01T00:05:00Z,LAX,5"}}},
	} {
		t.Run(fmt.Sprintf("%s/%d", c.late, c.channels), func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "in.csv"), lateInput())
			job := fmt.Sprintf(`dead_letter_path: dead.jsonl
source:
  csv:
    path: in.csv
    columns: {ts: timestamp, origin: string, delay: int64}
event_time:
  field: ts
  max_out_of_orderness: 10m
region:
  channels: %d
  key_by: [origin]
  ops:
    - window:
        size: 1h
        late: %s
        aggregates:
          flights: count
          total_delay: sum(delay)
sink:
  csv:
    path: out.csv
`, c.channels, c.late)
			rep, err := runJobFile(t, dir, job)
			if err != nil {
				t.Fatal(err)
			}
			if rep.RecordsIn != 602 || rep.Late != 1 || rep.Skipped != 0 || rep.DeadLetters != int64(len(c.dead)) {
				t.Errorf("records in %d, late %d, skipped %d, dead letters %d; want 602, 1, 0, %d",
					rep.RecordsIn, rep.Late, rep.Skipped, rep.DeadLetters, len(c.dead))
			}
			if got, want := readFile(t, filepath.Join(dir, "out.csv")), lateOutput(); got != want {
				t.Errorf("output\n%s\nwant\n%s", got, want)
			}
			dead := filepath.Join(dir, "dead.jsonl")
			if c.dead == nil {
				assertMissing(t, dead)
			} else if got := readDeadLetters(t, dead); !reflect.DeepEqual(got, c.dead) {
				t.Errorf("dead letters %+v, want %+v", got, c.dead)
			}
		})
	}
}
