package elastic

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplay replays timelines recorded on the real runtime
// (testdata/timelines/POLICY-CASE.csv, `streamd run --elastic-log` of
// scripts/bench.sh elastic's jobs; testdata/timelines/README says which
// runs) into both policies, open loop: each policy is given the recorded
// periods, whatever it decides (the channel counts are the recorded ones).
//
// For the policy that ran, the replay must give exactly the decisions in
// the file (rule, level, target channel count): the timeline holds the
// periods as the policy saw them, and the policy is a pure function of
// them. For both policies, properties that hold whatever the machine did:
//
//   - every decision lies in [min_channels, max_channels];
//   - a change up only with a congested window: more than half of the
//     last WindowPeriods periods at the count above the threshold;
//   - a change down without congestion only after ScaleDownPeriods
//     uncongested periods in a row at the count (the other changes down,
//     P5, DS2's check and its downstream bound, need congestion);
//   - for the policy that ran (its decisions were carried out): no change
//     within CoolDownPeriods periods of its previous one at the same
//     count, no change down followed by one up within the cool-down (in
//     periods the policy was given), and at most maxChanges changes. A change down followed by
//     one up within ScaleDownPeriods is logged, not failed: on a shared
//     machine the capacity itself moves (P5 steps down while the machine
//     is busy, P1 up when it is quiet again).
//
// The open-loop policy's decisions are not carried out, so it asks for
// the same change period after period; only the first three properties
// apply to it.
func TestReplay(t *testing.T) {
	files, err := filepath.Glob("testdata/timelines/*.csv")
	if err != nil || len(files) == 0 {
		t.Fatalf("no timelines: %v", err)
	}
	for _, f := range files {
		ran, _, _ := strings.Cut(filepath.Base(f), "-")
		t.Run(filepath.Base(f), func(t *testing.T) {
			in, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := ReadTimeline(in)
			in.Close()
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{PolicyLevels, PolicyDS2} {
				t.Run(name, func(t *testing.T) { replay(t, rows, name, name == ran) })
			}
		})
	}
}

// replayConfig is the config of scripts/bench.sh elastic's jobs as the
// runtime builds it: the defaults, 1–4 channels, starting at 1.
func replayConfig() Config {
	cfg := DefaultConfig()
	cfg.MinChannels, cfg.MaxChannels, cfg.InitialChannels = 1, 4, 1
	return cfg
}

// maxChanges bounds the changes of the policy that ran in one recorded
// timeline (tens of periods).
const maxChanges = 6

func replay(t *testing.T, rows []TimelineRow, name string, ran bool) {
	cfg := replayConfig()
	p, err := New(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	thr := cfg.CongestionThreshold
	var (
		cong       []float64 // congestion of the periods at the current count
		count      = -1      // the recorded count of the current stay
		lastChange = -1      // index in cong of the policy's last change at this count
		changes    []TimelineRow
		changedAt  []int // the step of each change in changes
		steps      int
	)
	for _, r := range rows {
		if !r.HasPeriod {
			if !strings.HasPrefix(string(r.Rule), "ctl:") {
				t.Fatalf("line %d: no period columns: record the timeline with this version", r.Line)
			}
			continue
		}
		steps++
		n := len(r.Period.Channels)
		if n != count {
			count, cong, lastChange = n, cong[:0], -1
		}
		c := r.Period.Congestion()
		cong = append(cong, c)
		d := p.Step(r.Period)
		at := fmt.Sprintf("line %d (t %.1f s, %d channels, congestion %.2f): %s", r.Line, r.T, n, c, d)
		if ran && (d.Rule != r.Rule || d.Channels != r.Target || d.Level != r.Level) {
			t.Errorf("%s\n  recorded: level %d channels %d rule %s", at, r.Level, r.Target, r.Rule)
		}
		if d.Channels < cfg.MinChannels || d.Channels > cfg.Limit() {
			t.Errorf("%s: outside [%d, %d]", at, cfg.MinChannels, cfg.Limit())
		}
		if !d.Changed() || d.Rule == RuleP6 {
			continue
		}
		w := cong[max(0, len(cong)-cfg.WindowPeriods):]
		congested := 0
		for _, x := range w {
			if x > thr {
				congested++
			}
		}
		calm := 0
		for i := len(cong) - 1; i >= 0 && cong[i] <= thr; i-- {
			calm++
		}
		switch {
		case d.Channels > n && 2*congested <= len(w) && 2*congested <= cfg.WindowPeriods:
			t.Errorf("%s: up without a congested window (%d of the last %d periods above %.2g)", at, congested, len(w), thr)
		case d.Channels < n && congested == 0 && calm < cfg.ScaleDownPeriods:
			t.Errorf("%s: down after %d uncongested periods, want %d", at, calm, cfg.ScaleDownPeriods)
		}
		if ran && lastChange >= 0 && len(cong)-1-lastChange < cfg.CoolDownPeriods {
			t.Errorf("%s: %d periods after the previous change at this count, cool-down %d", at, len(cong)-1-lastChange, cfg.CoolDownPeriods)
		}
		lastChange = len(cong) - 1
		if ran {
			r.Target, r.Channels = d.Channels, n
			changes = append(changes, r)
			changedAt = append(changedAt, steps)
		}
	}
	if steps == 0 {
		t.Fatal("no periods")
	}
	if !ran {
		return
	}
	if len(changes) > maxChanges {
		t.Errorf("%d changes, want at most %d", len(changes), maxChanges)
	}
	for i := 1; i < len(changes); i++ {
		a, b := changes[i-1], changes[i]
		down, up := a.Target < a.Channels, b.Target > b.Channels
		between := changedAt[i] - changedAt[i-1]
		switch {
		case !down || !up:
		case between < cfg.CoolDownPeriods:
			t.Errorf("line %d: %d -> %d at %.1f s, then %d -> %d at %.1f s, %d periods later: down and up again within the cool-down",
				b.Line, a.Channels, a.Target, a.T, b.Channels, b.Target, b.T, between)
		case between < cfg.ScaleDownPeriods:
			t.Logf("line %d: %d -> %d at %.1f s, then %d -> %d at %.1f s: down and up again within the scale-down delay",
				b.Line, a.Channels, a.Target, a.T, b.Channels, b.Target, b.T)
		}
	}
}
