package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// soakJob is a generator job over 100 K Zipf-skewed keys; the %s verbs
// take the region's elastic line and the checkpoint section.
const soakJob = `name: soak
source:
  generator: {seed: %d, count: 300000, keys: 100000, distribution: zipf, step: 1ms}
event_time: {field: ts}
region:
  channels: 2
  key_by: [key]
%s  ops:
    - window:
        size: 1m
        aggregates: {n: count, total: sum(value), top: max(value)}
%ssink:
  csv: {path: "${STREAMD_OUT}/soak.csv"}
`

// TestSoak runs for STREAMD_SOAK (a duration; skipped when unset,
// scripts/test-long.sh sets it): round after round, with a new seed each
// time, the soak job runs once static and once with its channel count
// changing at random and a checkpoint every 10 ms, in one process; the two
// outputs are identical, no goroutine outlives a round, and the live heap
// after a GC stays within twice the first round's plus 64 MiB.
func TestSoak(t *testing.T) {
	v := os.Getenv("STREAMD_SOAK")
	if v == "" {
		t.Skip("STREAMD_SOAK=DURATION runs it (scripts/test-long.sh)")
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("STREAMD_SOAK=%q: %v", v, err)
	}
	deadline := time.Now().Add(d)
	var idle goleak.Option // the goroutines after the first round
	var heap0 uint64
	round := 1
	for ; round == 1 || time.Now().Before(deadline); round++ {
		seed := uint64(round)
		static := runJobText(t, fmt.Sprintf(soakJob, seed, "", ""))
		el := fmt.Sprintf("  elastic: {random_every: %d, seed: %d, max_channels: 8}\n", 1+seed%3, seed)
		got := runJobText(t, fmt.Sprintf(soakJob, seed, el, "checkpoint: {dir: ck, interval: 10ms, retain: 2}\n"))
		if !bytes.Equal(got, static) {
			t.Fatalf("round %d: the rescaled, checkpointed output differs from the static one (%d vs %d bytes)", round, len(got), len(static))
		}
		runtime.GC()
		runtime.GC() // the second empties the pools' victim caches
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if round == 1 {
			idle, heap0 = goleak.IgnoreCurrent(), ms.HeapAlloc
			continue
		}
		if err := goleak.Find(idle); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if ms.HeapAlloc > 2*heap0+64<<20 {
			t.Fatalf("round %d: live heap %d MiB after a GC, %d MiB after round 1", round, ms.HeapAlloc>>20, heap0>>20)
		}
	}
	t.Logf("%d rounds in %s", round-1, d)
}
