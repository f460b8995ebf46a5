package control

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"streamd/core/jobfile"
	"streamd/core/runtime"
)

// TestLatencyPolicyScripted drives the policy with scripted periods.
func TestLatencyPolicyScripted(t *testing.T) {
	p := &Latency{Bound: 50 * time.Millisecond, Skew: 1.2, Cooldown: 1}
	steps := []struct {
		m    runtime.Metrics
		want string
	}{
		{runtime.Metrics{Channels: 2, MaxChannels: 4, LatencyP99: 80 * time.Millisecond, Skew: 1}, "scale 3"},
		{runtime.Metrics{Channels: 3, MaxChannels: 4, LatencyP99: 80 * time.Millisecond, Skew: 1}, ""}, // cool-down
		{runtime.Metrics{Channels: 3, MaxChannels: 4, LatencyP99: 10 * time.Millisecond, Skew: 1.5}, "rebalance"},
		{runtime.Metrics{Channels: 3, MaxChannels: 4, LatencyP99: 10 * time.Millisecond, Skew: 1.5}, ""},
		{runtime.Metrics{Channels: 4, MaxChannels: 4, LatencyP99: 90 * time.Millisecond, Skew: 1}, ""}, // at the maximum
	}
	for i, s := range steps {
		got := ""
		for _, a := range p.Step(s.m) {
			got = a.Kind
			if a.Kind == runtime.KindScale {
				got += " " + itoa(a.Channels)
			}
		}
		if got != s.want {
			t.Fatalf("period %d: %q, want %q", i, got, s.want)
		}
	}
}

func itoa(n int) string { return string(rune('0' + n)) }

// TestLatencyPolicyLive runs the policy against a real job with a latency
// source that always reports twice the bound: the policy scales the job
// up to its maximum, through the same path as the HTTP API.
func TestLatencyPolicyLive(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "job.yaml")
	os.WriteFile(path, []byte(`name: policy
source:
  generator: {seed: 1, count: 60000, rate: 20000, keys: 100, step: 1ms, start: 2026-01-01T00:00:00Z}
event_time: {field: ts}
region:
  channels: 1
  key_by: [key]
  elastic: {policy: off, max_channels: 3}
  ops:
    - window: {size: 1s, aggregates: {n: count}}
sink:
  discard:
`), 0o644)
	f, err := jobfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	job, err := f.Build(jobfile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan runtime.Live, 1)
	onStart := runtime.OnStart(func(l runtime.Live) { started <- l })
	done := make(chan *runtime.Report, 1)
	go func() {
		rep, err := runtime.Run(context.Background(), job, onStart)
		if err != nil {
			t.Error(err)
		}
		done <- rep
	}()
	l := <-started
	p := &Latency{Bound: time.Millisecond, Skew: 100}
	acted := runtime.RunPolicy(context.Background(), l, p, 20*time.Millisecond, func() time.Duration { return 2 * time.Millisecond })
	rep := <-done
	if acted != 2 || rep.CurrentChannels != 3 || rep.Reconfigurations[runtime.KindScale] != 2 {
		t.Fatalf("policy carried out %d actions; the job ended with %d channels and %v reconfigurations; want 2 scales to 3", acted, rep.CurrentChannels, rep.Reconfigurations)
	}
}
