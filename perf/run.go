package perf

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"streamd/core"
	"streamd/core/plan"
	"streamd/core/runtime"
	"streamd/sched"
)

// Latency histograms hold µs from 1 µs to 60 s with 3 significant digits.
const (
	histMinUs  = 1
	histMaxUs  = 60_000_000
	histDigits = 3
)

// SampleEvery is the period of the throughput-over-time series.
const SampleEvery = 100 * time.Millisecond

// Result is what one run of a workload measured. Latencies are in µs.
type Result struct {
	Workload string
	Options  Options
	// Mode describes the load offered: "closed loop", "open loop at R
	// records/s", or the workload's own schedule (Workload.Mode).
	Mode    string
	Machine Machine
	Start   time.Time

	RecordsIn  int64
	RecordsOut int64
	// WallSeconds is the run's wall time; RecordsPerSec = RecordsIn / it.
	WallSeconds   float64
	RecordsPerSec float64
	// CPUSeconds is the process's user + system CPU time during the run;
	// CoresUsed = CPUSeconds / WallSeconds; RecordsPerSecPerCore =
	// RecordsIn / CPUSeconds.
	CPUSeconds           float64
	CoresUsed            float64
	RecordsPerSecPerCore float64
	// Interrupted: the run was stopped by the caller's context (Ctrl-C
	// in streamd bench) before its source ended; TimeUp: by Duration. At
	// most one of them is true; neither when the source ended.
	Interrupted bool
	TimeUp      bool `json:",omitempty"`
	Latency     Latency
	// Throughput is records read per SampleEvery period over the run.
	Throughput []Sample
	// Extra holds workload-specific figures (ring: ring vs channel).
	Extra map[string]float64 `json:",omitempty"`
	// Rescales is the number of live channel changes (elastic).
	Rescales int64
	// Stages is each stage's thread CPU time and waiting (runtime.StageCPU,
	// ns in JSON); SerialFraction is Amdahl's s of the run
	// (runtime.Report.SerialFraction). Empty for workloads that are no job.
	Stages         []runtime.StageCPU `json:",omitempty"`
	SerialFraction float64            `json:",omitempty"`

	hist *hdrhistogram.Histogram
}

// Latency summarises the per-record latency distribution, in µs: from
// the batch stamp (the oldest record's entry, or in open loop its intended
// send time) to the sink.
type Latency struct {
	Count                           int64
	Mean                            float64
	P50, P90, P99, P999, P9999, Max int64
}

// Sample is one point of the throughput series.
type Sample struct {
	// T is seconds since the start of the run.
	T float64
	// Records is the number of records read by then.
	Records int64
	// RecordsPerSec is the rate over the period ending at T.
	RecordsPerSec float64
	// Channels is the region's channel count at T (0 without a region).
	Channels int `json:",omitempty"`
}

// Machine describes where a run ran.
type Machine struct {
	CPUModel   string
	NumCPU     int    // goruntime.NumCPU
	Cores      int    // usable cores (affinity and cgroup quota, sched.Detect)
	CPUs       string // sched.Detect's account of them
	GOMAXPROCS int
	Pinned     bool // stages pinned to cores
	GoVersion  string
	OS, Arch   string
}

// Histogram returns the run's latency histogram (µs).
func (r *Result) Histogram() *hdrhistogram.Histogram { return r.hist }

// Recorder collects what a run measures: latency on one goroutine (the
// sink's, or a Run workload's consumer) and a record count readable from
// any goroutine.
type Recorder struct {
	hist    *hdrhistogram.Histogram
	records atomic.Int64
	extraMu sync.Mutex
	extra   map[string]float64
}

func newRecorder() *Recorder {
	return &Recorder{hist: hdrhistogram.New(histMinUs, histMaxUs, histDigits)}
}

// Latency records n records that each took ns nanoseconds. Not safe for
// concurrent use: call it from one goroutine.
func (r *Recorder) Latency(ns, n int64) {
	us := ns / 1000
	us = min(max(us, histMinUs), histMaxUs)
	r.hist.RecordValues(us, n)
}

// Add counts n records done (any goroutine).
func (r *Recorder) Add(n int64) { r.records.Add(n) }

// Set stores a workload-specific figure for the report.
func (r *Recorder) Set(name string, v float64) {
	r.extraMu.Lock()
	defer r.extraMu.Unlock()
	if r.extra == nil {
		r.extra = map[string]float64{}
	}
	r.extra[name] = v
}

// Run runs w with opt and measures it; see RunContext.
func Run(w Workload, opt Options) (*Result, error) {
	return RunContext(context.Background(), w, opt)
}

// RunContext builds w's job, runs it until its source ends, opt.Duration
// passes (if > 0) or ctx is done, and returns what it measured. A run cut
// short by opt.Duration (Result.TimeUp) or ctx (Result.Interrupted) is a
// normal end; any
// other job error is returned with the partial result.
func RunContext(ctx context.Context, w Workload, opt Options) (*Result, error) {
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	if err := w.Check(opt); err != nil {
		return nil, err
	}
	res := &Result{Workload: w.Name, Options: opt, Mode: w.mode(opt), Machine: machine()}
	rec := newRecorder()
	var job *plan.Job
	var ropts []runtime.Option // how the job runs
	if w.Run == nil {
		if w.Build == nil {
			return nil, fmt.Errorf("workload %q: neither Build nor Run", w.Name)
		}
		var err error
		if job, err = w.Build(opt); err != nil {
			return nil, fmt.Errorf("workload %s: %w", w.Name, err)
		}
		job.Log = opt.Log
		if !opt.Unpinned {
			p := runtime.JobPlacer(job, opt.Log)
			ropts = append(ropts, runtime.Placement(p))
			res.Machine.Pinned = p.Pinned()
		}
	}

	if opt.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opt.Duration)
		defer cancel()
	}

	// The sampler reads the job's live counters (or the recorder's count).
	var live atomic.Pointer[runtime.Live]
	count := func() (int64, int) {
		if job == nil {
			return rec.records.Load(), 0
		}
		l := live.Load()
		if l == nil {
			return 0, 0
		}
		return l.Snapshot().RecordsIn, l.Channels()
	}
	if job != nil {
		ropts = append(ropts, runtime.OnStart(func(l runtime.Live) { live.Store(&l) }))
		job.OnSink = func(b *core.Batch) {
			if b.Stamp != 0 {
				rec.Latency(time.Now().UnixNano()-b.Stamp, int64(b.Len))
			}
		}
	}

	cpu0 := cpuTime()
	res.Start = time.Now()
	stopSampler := make(chan struct{})
	samplerDone := make(chan []Sample)
	go func() { samplerDone <- sample(res.Start, count, stopSampler) }()

	var rep *runtime.Report
	var err error
	if job != nil {
		rep, err = runtime.Run(ctx, job, ropts...)
	} else {
		err = w.Run(ctx, opt, rec)
	}
	wall := time.Since(res.Start)
	cpu := cpuTime() - cpu0
	close(stopSampler)
	res.Throughput = <-samplerDone

	if errors.Is(err, runtime.ErrInterrupted) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		res.TimeUp = errors.Is(ctx.Err(), context.DeadlineExceeded)
		res.Interrupted, err = !res.TimeUp, nil
	}
	if rep != nil {
		res.RecordsIn, res.RecordsOut, res.Rescales = rep.RecordsIn, rep.RecordsOut, rep.Rescales
		res.Stages, res.SerialFraction = rep.Stages, rep.SerialFraction
	} else {
		res.RecordsIn = rec.records.Load()
		res.RecordsOut = res.RecordsIn
	}
	res.WallSeconds = wall.Seconds()
	res.CPUSeconds = cpu.Seconds()
	if res.WallSeconds > 0 {
		res.RecordsPerSec = float64(res.RecordsIn) / res.WallSeconds
		res.CoresUsed = res.CPUSeconds / res.WallSeconds
	}
	if res.CPUSeconds > 0 {
		res.RecordsPerSecPerCore = float64(res.RecordsIn) / res.CPUSeconds
	}
	res.hist = rec.hist
	res.Latency = summarise(rec.hist)
	res.Extra = rec.extra
	if err != nil {
		return res, fmt.Errorf("workload %s: %w", w.Name, err)
	}
	return res, nil
}

func summarise(h *hdrhistogram.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{
		Count: h.TotalCount(), Mean: h.Mean(),
		P50: h.ValueAtQuantile(50), P90: h.ValueAtQuantile(90), P99: h.ValueAtQuantile(99),
		P999: h.ValueAtQuantile(99.9), P9999: h.ValueAtQuantile(99.99), Max: h.Max(),
	}
}

// sample reads count every SampleEvery until stop is closed, then once
// more, and returns the series.
func sample(start time.Time, count func() (int64, int), stop <-chan struct{}) []Sample {
	t := time.NewTicker(SampleEvery)
	defer t.Stop()
	var out []Sample
	lastT, lastN := 0.0, int64(0)
	take := func() {
		n, ch := count()
		now := time.Since(start).Seconds()
		s := Sample{T: now, Records: n, Channels: ch}
		if now > lastT {
			s.RecordsPerSec = float64(n-lastN) / (now - lastT)
		}
		out = append(out, s)
		lastT, lastN = now, n
	}
	for {
		select {
		case <-t.C:
			take()
		case <-stop:
			take()
			return out
		}
	}
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func machine() Machine {
	cpus := sched.Detect()
	return Machine{
		CPUModel:   cpuModel(),
		NumCPU:     goruntime.NumCPU(),
		Cores:      cpus.Cores(),
		CPUs:       cpus.String(),
		GOMAXPROCS: goruntime.GOMAXPROCS(0),
		GoVersion:  goruntime.Version(),
		OS:         goruntime.GOOS,
		Arch:       goruntime.GOARCH,
	}
}

// cpuModel is the first "model name" of /proc/cpuinfo ("" if none).
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
