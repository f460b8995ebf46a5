package runtime_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"streamd/core/runtime"
	"streamd/elastic"
)

// timelineRows parses a --elastic-log timeline: its header must be the
// documented one; rows by rule.
func timelineRows(t *testing.T, name string, b *bytes.Buffer) map[string][]map[string]string {
	t.Helper()
	rows, err := csv.NewReader(b).ReadAll()
	if err != nil {
		t.Fatalf("%s: timeline: %v", name, err)
	}
	want := elastic.TimelineHeader
	if len(rows) == 0 || strings.Join(rows[0], ",") != want {
		t.Fatalf("%s: timeline header %v, want %s", name, rows, want)
	}
	by := map[string][]map[string]string{}
	for _, r := range rows[1:] {
		m := map[string]string{}
		for i, h := range rows[0] {
			m[h] = r[i]
		}
		by[m["rule"]] = append(by[m["rule"]], m)
	}
	return by
}

// tickClock is a clock that moves one second per reading: every call is
// a period boundary for a controller or rebalancer with a 1 s period.
func tickClock() func() time.Time {
	var s atomic.Int64
	return func() time.Time { return time.Unix(1_700_000_000+s.Add(1), 0) }
}

// The level controller of region.elastic runs as a Policy through the
// control API: a region started at 5 channels, off the level map, is
// moved to 6 by rule P6 at the first whole period — a scale request
// served as the HTTP API's is (reason "elastic levels: P6", a sync
// point), counted, kept as the plan's last decision and written as a
// period row, not as a ctl:scale row. The output is the single channel's
// with the single source stage and with source workers.
func TestElasticControllerOnControlAPI(t *testing.T) {
	recs := outOfOrder(30_000, 300, 3)
	ref, refSink := exchangeJob(t, newBlockSource(recs, 2), -1, 1, 60e9, 20e9, "")
	runOK(t, "reference", ref)
	for _, m := range []int{-1, 2} {
		name := fmt.Sprint(m, " workers")
		job, sink := exchangeJob(t, newBlockSource(recs, 2), m, 5, 60e9, 20e9, "")
		cfg := elastic.DefaultConfig()
		cfg.MaxChannels = 8
		var tl bytes.Buffer
		job.Region.MaxChannels, job.Region.Timeline = 8, &tl
		job.Region.Elastic = &runtime.Elastic{Policy: "levels", Config: cfg, Now: tickClock()}
		var live runtime.Live
		onStart := runtime.OnStart(func(l runtime.Live) { live = l })
		rep := runOK(t, name, job, onStart)
		if !slices.Equal(sink.lines, refSink.lines) {
			t.Fatalf("%s: %d lines vs %d: %s", name, len(sink.lines), len(refSink.lines), diffAt(sink.lines, refSink.lines))
		}
		plan := live.Plan()
		if len(plan.Log) == 0 {
			t.Fatalf("%s: no reconfigurations", name)
		}
		first := plan.Log[0]
		if first.Kind != runtime.KindScale || first.Reason != "elastic levels: P6" || first.From != 5 || first.To != 6 || first.Seq == 0 || first.Err != "" ||
			first.Inputs["level"] != "4" {
			t.Fatalf("%s: first reconfiguration %+v, want a scale 5 → 6 by elastic levels: P6 at a sync point", name, first)
		}
		if rep.Reconfigurations[runtime.KindScale] < 1 || rep.Rescales < 1 || !strings.HasPrefix(plan.Decision, "level ") || plan.Controller != "levels" {
			t.Fatalf("%s: %v reconfigurations, %d rescales, last decision %q, controller %q", name, rep.Reconfigurations, rep.Rescales, plan.Decision, plan.Controller)
		}
		replayTimeline(t, name, "levels", cfg, 5, tl.Bytes())
		rows := timelineRows(t, name, &tl)
		p6 := rows["P6"]
		if len(p6) == 0 || p6[0]["channels"] != "5" || p6[0]["applied"] != "true" || p6[0]["target"] != "6" || p6[0]["level"] != "4" {
			t.Fatalf("%s: P6 rows %v", name, p6)
		}
		if len(rows["ctl:scale"]) != 0 {
			t.Fatalf("%s: the controller's own scales written as ctl rows: %v", name, rows["ctl:scale"])
		}
	}
}

// replayTimeline reads a timeline back (elastic.ReadTimeline) and steps a
// fresh policy (name, cfg, starting at initial channels) with each period
// row's period: every decision must be the one recorded, so the raw
// columns hold the periods exactly as the job's controller saw them.
func replayTimeline(t *testing.T, name, policy string, cfg elastic.Config, initial int, tl []byte) {
	t.Helper()
	rows, err := elastic.ReadTimeline(bytes.NewReader(tl))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	cfg.InitialChannels = initial
	p, err := elastic.New(policy, cfg)
	if err != nil {
		t.Fatal(err)
	}
	periods := 0
	for _, r := range rows {
		if !r.HasPeriod {
			continue
		}
		periods++
		if d := p.Step(r.Period); d.Rule != r.Rule || d.Channels != r.Target || d.Level != r.Level {
			t.Fatalf("%s: line %d replayed: %s (level %d, %d channels), recorded %s (level %d, %d channels)", name, r.Line, d.Rule, d.Level, d.Channels, r.Rule, r.Level, r.Target)
		}
	}
	if periods == 0 {
		t.Fatalf("%s: no period rows", name)
	}
}

// pause-controller holds the job's own controller: paused before the
// first record, the level controller never steps (no decision, no
// period row) and the region keeps its 5 channels, off the level map.
func TestPauseHoldsController(t *testing.T) {
	recs := outOfOrder(20_000, 300, 4)
	for _, m := range []int{-1, 2} {
		name := fmt.Sprint(m, " workers")
		job, _ := exchangeJob(t, newBlockSource(recs, 2), m, 5, 60e9, 20e9, "")
		cfg := elastic.DefaultConfig()
		cfg.MaxChannels = 8
		var tl bytes.Buffer
		job.Region.MaxChannels, job.Region.Timeline = 8, &tl
		job.Region.Elastic = &runtime.Elastic{Policy: "levels", Config: cfg, Now: tickClock()}
		var live runtime.Live
		onStart := runtime.OnStart(func(l runtime.Live) { live = l; l.PauseController("test") })
		rep := runOK(t, name, job, onStart)
		plan := live.Plan()
		if rep.Rescales != 0 || rep.CurrentChannels != 5 || plan.Decision != "" || !plan.Paused {
			t.Fatalf("%s: %d rescales, %d channels, last decision %q, paused %v", name, rep.Rescales, rep.CurrentChannels, plan.Decision, plan.Paused)
		}
		if rows := timelineRows(t, name, &tl); len(rows) != 0 {
			t.Fatalf("%s: timeline rows while paused: %v", name, rows)
		}
	}
}

// Rebalance steps are written into the timeline: with random_every, one
// rebalance-step row per step carried out (the key groups it moves, no
// bytes: a random step measures none, its batch as the reason); with the
// auto policy on a skewed load, a rebalance row per plan (skew measured
// above its target, planned skew at most the measured one, key groups,
// bytes and steps), followed by its steps' rows. The output is the
// single channel's for every source parallelism and channel count.
func TestTimelineRebalanceRows(t *testing.T) {
	recs := outOfOrder(30_000, 12, 5)
	for i := range recs {
		if i%3 == 0 {
			recs[i].k = "key000" // a hot key: a third of the load
		}
	}
	ref, refSink := exchangeJob(t, newBlockSource(recs, 2), -1, 1, 60e9, 20e9, "")
	runOK(t, "reference", ref)
	for _, mode := range []string{"random", "auto"} {
		for _, c := range []struct{ m, n int }{{-1, 2}, {2, 3}} {
			name := fmt.Sprintf("%s, %d workers, %d channels", mode, c.m, c.n)
			job, sink := exchangeJob(t, newBlockSource(recs, 2), c.m, c.n, 60e9, 20e9, "")
			var tl bytes.Buffer
			job.Region.Timeline = &tl
			if mode == "random" {
				job.Region.Rebalance = &runtime.Rebalance{RandomEvery: 3, Seed: 9}
			} else {
				job.Region.Rebalance = &runtime.Rebalance{Auto: true, TargetSkew: 1.05, Period: time.Second, Now: tickClock()}
			}
			rep := runOK(t, name, job)
			if !slices.Equal(sink.lines, refSink.lines) {
				t.Fatalf("%s: %d lines vs %d: %s", name, len(sink.lines), len(refSink.lines), diffAt(sink.lines, refSink.lines))
			}
			rows := timelineRows(t, name, &tl)
			steps := rows["rebalance-step"]
			if rep.Rebalance == nil || rep.Rebalance.Steps == 0 || int64(len(steps)) != rep.Rebalance.Steps {
				t.Fatalf("%s: %d step rows, report %+v", name, len(steps), rep.Rebalance)
			}
			var moved int64
			for _, s := range steps {
				g, _ := strconv.Atoi(s["groups"])
				moved += int64(g)
				if s["channels"] != fmt.Sprint(c.n) || s["target"] != s["channels"] || g < 1 {
					t.Fatalf("%s: step row %v", name, s)
				}
				if mode == "random" && (s["bytes"] != "" || !strings.HasPrefix(s["reason"], "random_every: batch ")) {
					t.Fatalf("%s: random step row %v", name, s)
				}
				if mode == "auto" && (s["bytes"] == "" || !strings.Contains(s["reason"], ": rebalancer: skew ")) {
					t.Fatalf("%s: planned step row %v", name, s)
				}
			}
			if moved != rep.Rebalance.Groups {
				t.Fatalf("%s: step rows move %d key groups, the report %d", name, moved, rep.Rebalance.Groups)
			}
			plans := rows["rebalance"]
			if mode == "random" {
				if len(plans) != 0 {
					t.Fatalf("%s: plan rows %v", name, plans)
				}
				continue
			}
			if int64(len(plans)) != rep.Rebalance.Plans || len(plans) == 0 {
				t.Fatalf("%s: %d plan rows, %d plans", name, len(plans), rep.Rebalance.Plans)
			}
			for _, p := range plans {
				before, _ := strconv.ParseFloat(p["skew"], 64)
				after, _ := strconv.ParseFloat(p["planned_skew"], 64)
				g, _ := strconv.Atoi(p["groups"])
				if p["applied"] != "true" || before <= 1.05 || after > before || g < 1 || p["bytes"] == "" || p["steps"] == "" ||
					!strings.HasPrefix(p["reason"], "rebalancer: skew ") {
					t.Fatalf("%s: plan row %v", name, p)
				}
			}
		}
	}
}

// runOK runs job and fails the test on an error.
func runOK(t *testing.T, name string, job *runtime.Job, opts ...runtime.Option) *runtime.Report {
	t.Helper()
	rep, err := runtime.Run(context.Background(), job, opts...)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return rep
}
