package jobfile

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"streamd/core/runtime"
	"streamd/internal/tier"
)

// localInputs is 8 CSV files (one block each) of 1500 records: half of
// them key "hot", the rest 30 keys; one in 20 moved back by up to 900 ms
// (a 300 ms bound makes some late, some partly late in sliding windows);
// v nullable (empty one in 9 times); big near ±2⁶³ for keys k3 (sums
// that leave the int64 range and come back) and k4 (sums beyond it: the
// window dead-letters them); a malformed record per file.
func localInputs() map[string]string {
	rnd := rand.New(rand.NewPCG(12, 5))
	files := map[string]string{}
	i := 0
	for f := range 8 {
		var b strings.Builder
		b.WriteString("ts,k,v,big\n")
		for range 1500 {
			ts := i * 3
			if rnd.IntN(20) == 0 {
				ts = max(0, ts-rnd.IntN(900))
			}
			k := "hot"
			if rnd.IntN(2) == 0 {
				k = fmt.Sprintf("k%d", rnd.IntN(30))
			}
			v := fmt.Sprint(rnd.IntN(100))
			if rnd.IntN(9) == 0 {
				v = ""
			}
			big := int64(rnd.IntN(1000))
			switch k {
			case "k3":
				big = 9_000_000_000_000_000_000 - big
				if i%2 == 1 {
					big = -big
				}
			case "k4":
				big = 9_000_000_000_000_000_000 + big
			}
			if i%997 == 500 {
				b.WriteString("7,k1,oops,1\n")
			}
			fmt.Fprintf(&b, "%d,%s,%s,%d\n", ts, k, v, big)
			i++
		}
		files[fmt.Sprintf("in/%d.csv", f)] = b.String()
	}
	return files
}

// localJob is a keyed window over localInputs with local_aggregation set
// to local, and extra lines for the region (elastic:, rebalance:).
func localJob(window, local, region string) string {
	return "on_error: dead_letter\ndead_letter_path: dead.jsonl\n" +
		"source:\n  csv: {path: in/*.csv, columns: {ts: int64, k: string, v: {type: int64, nullable: true}, big: int64}}\n" +
		"event_time: {field: ts, unit: ms, max_out_of_orderness: 300ms}\n" +
		"region:\n  key_by: [k]\n" + region + "  ops:\n    - window: {" + window + ", local_aggregation: " + local +
		", aggregates: {n: count, c: count(v), s: sum(v), a: avg(v), lo: min(v), hi: max(v), q: count_if(v > 50), big: sum(big), bhi: max(big), t: max(ts)}}\n" +
		"sink:\n  csv: {path: out.csv}\n"
}

// The local step changes nothing a job promises: with local_aggregation
// on, the output, the dead letters (malformed records, sums beyond int64)
// and the late and partly late counts equal the plain job's, for the single
// source stage and 1, 2 and 3 source workers, 1 and 3 channels, tumbling
// and sliding windows (each window the whole grid in the long tier; half
// of it in the fast one, the windows taking turns), and under random live
// channel changes and random rebalance steps; and the hot key is folded
// (the local step emits fewer records than it reads).
func TestLocalAggregationSameOutput(t *testing.T) {
	files := localInputs()
	for w, window := range []string{"size: 200ms", "size: 400ms, slide: 100ms"} {
		want, wantDead, wantRep := runFiles(t, files, localJob(window, "off", ""), 1, 1)
		if wantRep.Late == 0 || wantRep.DeadLetters < 8+2 || wantRep.RecordsIn != 12_000 || !strings.Contains(wantDead, "beyond the int64 range") {
			t.Fatalf("%s: plain job: %d late, %d dead letters, %d in", window, wantRep.Late, wantRep.DeadLetters, wantRep.RecordsIn)
		}
		if strings.Contains(window, "slide") && wantRep.PartlyLate == 0 {
			t.Fatalf("%s: no partly late record", window)
		}
		check := func(what, job string, m, n int) {
			t.Helper()
			got, dead, rep := runFiles(t, files, job, m, n)
			wantDead := wantDead
			if m > 0 && positioned(dead) != positioned(wantDead) {
				t.Fatalf("%s, %s, %d workers, %d channels: dead letters of records in another order", window, what, m, n)
			}
			// The single source stage writes malformed records as it reads
			// them; and a window's dead letters (a sum beyond int64, no
			// position) fall between the others by timing, with or without
			// the local step: the same lines, another order.
			dead, wantDead = sortedLines(dead), sortedLines(wantDead)
			if got != want || dead != wantDead || rep.Late != wantRep.Late || rep.PartlyLate != wantRep.PartlyLate ||
				rep.DeadLetters != wantRep.DeadLetters || rep.RecordsIn != wantRep.RecordsIn {
				t.Fatalf("%s, %s, %d workers, %d channels: %d late, %d partly late, %d dead letters (want %d, %d, %d); output equal %v, dead letters equal %v",
					window, what, m, n, rep.Late, rep.PartlyLate, rep.DeadLetters, wantRep.Late, wantRep.PartlyLate, wantRep.DeadLetters, got == want, dead == wantDead)
			}
			if what == "rebalance" && (rep.Rebalance == nil || rep.Rebalance.Holds == 0) {
				t.Fatalf("%s, %s, %d workers, %d channels: no gaining channel held its key groups: %+v", window, what, m, n, rep.Rebalance)
			}
			local := localReport(rep)
			if local == nil || local.Out >= local.In || local.In != rep.RecordsIn {
				t.Fatalf("%s, %s, %d workers, %d channels: local step %+v, want fewer records out than the %d in", window, what, m, n, local, rep.RecordsIn)
			}
		}
		for i, m := range []int{-1, 1, 2, 3} {
			for j, n := range []int{1, 3} {
				if !tier.Long() && (i+j+w)%2 != 0 {
					continue
				}
				check("on", localJob(window, "on", ""), m, n)
			}
		}
		check("auto", localJob(window, "auto", ""), 2, 3)
		check("elastic", localJob(window, "on", "  elastic: {random_every: 1, seed: 3, max_channels: 5}\n"), 2, 2)
		check("elastic", localJob(window, "on", "  elastic: {random_every: 2, seed: 4, max_channels: 5}\n"), -1, 2)
		check("rebalance", localJob(window, "on", "  rebalance: {random_every: 1, seed: 5}\n"), 3, 3)
		check("rebalance", localJob(window, "on", "  rebalance: {random_every: 1, seed: 6}\n"), -1, 3)
		// Steps a few batches apart: gaining channels hold the local
		// step's partials of the groups in transit and go on.
		check("rebalance", localJob(window, "on", "  rebalance: {random_every: 3, seed: 7}\n"), -1, 2)
		check("rebalance", localJob(window, "on", "  rebalance: {random_every: 4, seed: 8}\n"), 2, 3)
	}
}

// positioned is the dead letters that name an input position, in order.
func positioned(dead string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(dead, "\n") {
		if strings.Contains(l, `"pos":`) {
			b.WriteString(l)
		}
	}
	return b.String()
}

// localReport is the local step's operator report, or nil.
func localReport(rep *runtime.Report) *runtime.OperatorReport {
	for i := range rep.Operators {
		if strings.HasSuffix(rep.Operators[i].Name, "(local)") {
			return &rep.Operators[i]
		}
	}
	return nil
}

// local_aggregation is checked where it is written: an unknown mode, a
// float aggregate and late: dead_letter are refused with on (auto turns
// itself off), naming line and column.
func TestLocalAggregationErrors(t *testing.T) {
	base := "source:\n  csv: {path: in.csv, columns: {ts: int64, key: string, v: int64, ratio: float64}}\nevent_time: {field: ts, unit: ms}\n" +
		"dead_letter_path: dead.jsonl\nregion:\n  key_by: [key]\n  ops:\n    %s\nsink:\n  discard: {}\n"
	for _, c := range []struct{ ops, want string }{
		{"- window: {size: 1s, local_aggregation: yes, aggregates: {n: count}}",
			`job.yaml:8:45: region.ops[0].window.local_aggregation: local_aggregation "yes": expected off, on or auto`},
		{"- window: {size: 1s, local_aggregation: on, aggregates: {f: sum(ratio)}}",
			`job.yaml:8:45: region.ops[0].window.local_aggregation: local_aggregation: on: aggregate "f": sum of float field "ratio" is not exact`},
		{"- window: {size: 1s, local_aggregation: on, late: dead_letter, aggregates: {n: count}}",
			`local_aggregation: on: late: dead_letter writes each late record`},
		{"- filter: v > 0\n    - window: {size: 1s, local_aggregation: on, aggregates: {n: count}}",
			`region.ops[1].window.local_aggregation: local_aggregation: on: only the first operator of the region`},
	} {
		dir := t.TempDir()
		writeFile(t, dir+"/in.csv", "ts,key,v,ratio\n1,a,1,0.5\n")
		writeFile(t, dir+"/job.yaml", fmt.Sprintf(base, c.ops))
		f, err := Load(dir + "/job.yaml")
		if err == nil {
			_, err = f.Build(Options{})
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.ops, err, c.want)
		}
	}
	// auto with a float aggregate is off: no local step.
	dir := t.TempDir()
	writeFile(t, dir+"/in.csv", "ts,key,v,ratio\n1,a,1,0.5\n")
	rep, err := runJobFile(t, dir, fmt.Sprintf(base, "- window: {size: 1s, local_aggregation: auto, aggregates: {f: sum(ratio)}}"))
	if err != nil || localReport(rep) != nil {
		t.Errorf("auto over a float sum: error %v, local step %+v", err, localReport(rep))
	}
}
