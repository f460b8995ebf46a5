package perf

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"streamd/core/plan"
)

// Options parameterise a workload run.
type Options struct {
	// Duration bounds an unbounded workload (closed or open loop).
	Duration time.Duration
	// Rate, if > 0, runs open loop at this many records/s (events/s for
	// Nexmark); 0 runs closed loop, as fast as possible.
	Rate float64
	// Count, if > 0, bounds the number of source records.
	Count int64
	// Channels is the parallel region's channel count (0: the workload's
	// default).
	Channels int
	// Seed seeds generators.
	Seed uint64
	// DataDir holds the flights data (flights-3m.parquet, airports.csv).
	DataDir string
	// OutDir receives the workload's output files, if any.
	OutDir string
	// Unpinned runs the job's stages on plain goroutines; by default they
	// are pinned to cores where there are enough (runtime.CorePlacer).
	Unpinned bool
	// Log receives the job's log (nil: discarded).
	Log *slog.Logger `json:"-"`
}

// Workload builds a runnable job for the harness. Build returns a job
// whose Sink the harness may wrap; the harness sets OnSink (latency) and
// passes runtime.OnStart (live counters) itself.
type Workload struct {
	Name        string
	Description string
	Build       func(opt Options) (*plan.Job, error)
	// Run, if set instead of Build, is a workload that runs no job (a
	// micro-benchmark such as "ring"): it measures itself into rec, which
	// records latency on one goroutine and counts records for the
	// throughput series, and returns when done (or when ctx, which carries
	// Options.Duration, is done).
	Run func(ctx context.Context, opt Options, rec *Recorder) error
	// Mode, if set, describes the load the workload offers under opt, for
	// Result.Mode (e.g. elastic's rate steps); nil: Options.Rate says it
	// (DefaultMode).
	Mode func(opt Options) string
	// NoRate: the workload has no rate (ring, a closed-loop transfer
	// benchmark); a run with Options.Rate > 0 is refused (Check).
	NoRate bool
}

// Check refuses options the workload cannot honour before anything runs.
func (w Workload) Check(opt Options) error {
	if w.NoRate && opt.Rate > 0 {
		return fmt.Errorf("the %s workload has no rate: it runs closed loop, as fast as it goes; run it without --rate", w.Name)
	}
	return nil
}

// mode is Result.Mode for a run of w with opt.
func (w Workload) mode(opt Options) string {
	if w.Mode != nil {
		return w.Mode(opt)
	}
	return DefaultMode(opt)
}

// DefaultMode describes the load of a workload paced by Options.Rate
// alone: "closed loop", or "open loop at R records/s".
func DefaultMode(opt Options) string {
	if opt.Rate > 0 {
		return fmt.Sprintf("open loop at %.0f records/s", opt.Rate)
	}
	return "closed loop"
}

var (
	mu        sync.Mutex
	workloads = map[string]Workload{}
)

// Register adds a workload; a second one of the same name panics.
func Register(w Workload) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := workloads[w.Name]; dup {
		panic(fmt.Sprintf("perf: workload %q registered twice", w.Name))
	}
	workloads[w.Name] = w
}

// Lookup returns the named workload.
func Lookup(name string) (Workload, error) {
	mu.Lock()
	defer mu.Unlock()
	w, ok := workloads[name]
	if !ok {
		return Workload{}, fmt.Errorf("no workload %q (have: %s)", name, strings.Join(namesLocked(), ", "))
	}
	return w, nil
}

// Names lists the registered workloads, sorted.
func Names() []string {
	mu.Lock()
	defer mu.Unlock()
	return namesLocked()
}

func namesLocked() []string {
	names := make([]string, 0, len(workloads))
	for n := range workloads {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
