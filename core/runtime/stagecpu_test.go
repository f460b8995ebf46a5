package runtime_test

import (
	"context"
	"math"
	"streamd/sched"
	"testing"

	"streamd/core/runtime"
	"streamd/internal/tier"
)

// A finished job reports every stage's CPU: the source, each channel and
// the merger, each with waiting ≤ CPU, and a serial fraction that is the
// source's and merger's work over the process's CPU less all waiting.
func TestStageCPUReported(t *testing.T) {
	recs := genRecords(tier.Pick(50_000, 200_000), 500, 11)
	for _, n := range []int{1, 3} {
		job, err := windowJob(recs, n, &memSink{})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := runtime.Run(context.Background(), job)
		if err != nil {
			t.Fatal(err)
		}
		counts := map[string]int{}
		var serial, wait int64
		for _, s := range rep.Stages {
			counts[s.Stage]++
			if s.CPU <= 0 || s.Wait < 0 || s.Wait > s.CPU {
				t.Fatalf("%d channels: stage %+v", n, s)
			}
			if s.Replicated != (s.Stage == "channel") {
				t.Fatalf("%d channels: stage %+v replicated %v", n, s, s.Replicated)
			}
			wait += int64(s.Wait)
			if !s.Replicated {
				serial += int64(s.Work())
			}
		}
		// Each channel's work CPU, read after each data batch, is positive
		// and at most its stage's work (thread CPU less waiting) at the end.
		for _, s := range rep.Stages {
			if s.Stage != "channel" || sched.ThreadCPU() == 0 {
				continue
			}
			ch := rep.Channels[s.Index]
			if ch.Records > 0 && (ch.CPUNs <= 0 || ch.CPUNs > int64(s.Work())) {
				t.Fatalf("%d channels: channel %d work CPU %d ns, stage work %v", n, s.Index, ch.CPUNs, s.Work())
			}
		}
		if counts["source"] != 1 || counts["merger"] != 1 || counts["channel"] != n {
			t.Fatalf("%d channels: stages %v", n, counts)
		}
		want := float64(serial) / float64(int64(rep.ProcessCPU)-wait)
		if s := rep.SerialFraction; s <= 0 || s > 1 || s != min(1, want) {
			t.Fatalf("%d channels: serial fraction %v, want %v (process CPU %v)", n, s, want, rep.ProcessCPU)
		}
	}
}

func TestAmdahlBound(t *testing.T) {
	for _, c := range []struct {
		s    float64
		k    int
		want float64
	}{{0, 14, 14}, {1, 14, 1}, {0.5, 2, 4.0 / 3}, {0.013, 14, 11.976}} {
		if got := runtime.AmdahlBound(c.s, c.k); math.Abs(got-c.want) > 1e-3 {
			t.Errorf("AmdahlBound(%v, %d) = %v, want %v", c.s, c.k, got, c.want)
		}
	}
}
