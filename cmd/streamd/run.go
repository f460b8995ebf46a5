package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"streamd/core"
	"streamd/core/jobfile"
	"streamd/core/plan"
	"streamd/core/runtime"
	"streamd/perf"
	"streamd/snapshot"
)

type runFlags struct {
	channels   int
	sourcePar  int
	outWorkers int
	quiet      bool
	cpuProfile string
	memProfile string
	elasticLog string
	restore    string

	mutexProfile   string
	pprofAddr      string
	metricsAddr    string
	statusInterval time.Duration
	controlAddr    string
	controlToken   string

	// logLevel is the level of the job's log (--log-level, -v); --quiet
	// without either lowers it to error.
	logLevel slog.Level
}

func newRunCmd(lf *logFlags) *cobra.Command {
	var fl runFlags
	cmd := &cobra.Command{
		Use:   "run job.yaml",
		Short: "Run a job",
		Args:  oneArg("run: expected a job file (streamd run JOB.yaml)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			// 0 (auto) is the job file's default; on the command line a
			// count is given, so the range starts at 1.
			if cmd.Flags().Changed("source-parallelism") && (fl.sourcePar < 1 || fl.sourcePar > 256) {
				return usageErr(fmt.Errorf("--source-parallelism must be between 1 and 256, not %d (leave it out for auto)", fl.sourcePar))
			}
			if cmd.Flags().Changed("output-workers") && (fl.outWorkers < 1 || fl.outWorkers > 256) {
				return usageErr(fmt.Errorf("--output-workers must be between 1 and 256, not %d (leave it out for auto)", fl.outWorkers))
			}
			if cmd.Flags().Changed("channels") && fl.channels < 1 {
				return usageErr(fmt.Errorf("--channels must be between 1 and 1024, not %d", fl.channels))
			}
			if cmd.Flags().Changed("restore") && fl.restore == "" {
				// An unset variable in --restore "$CKPT" must not start afresh.
				return usageErr(errors.New("--restore needs latest or a checkpoint directory, not an empty value"))
			}
			level, chosen, err := lf.Level(cmd)
			if err != nil {
				return err
			}
			if fl.quiet && !chosen {
				level = slog.LevelError
			}
			fl.logLevel = level
			return runJob(cmd.Context(), args[0], fl, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().IntVar(&fl.sourcePar, "source-parallelism", 0, "source workers reading the blocks of a Parquet, CSV or JSON-lines file or a generator at once, 1 to 256 (overrides source.parallelism; output does not depend on it)")
	cmd.Flags().IntVar(&fl.outWorkers, "output-workers", 0, "output workers running the post-region operators and encoding, 1 to 256 (overrides runtime.output_workers; output does not depend on it)")
	cmd.Flags().IntVar(&fl.channels, "channels", 0, "channel count of the parallel region, 1 to 1024 (overrides region.channels; the job must have a region)")
	cmd.Flags().BoolVarP(&fl.quiet, "quiet", "q", false, "print no report, status lines or notes, and only error log lines unless --log-level or -v says otherwise")
	cmd.Flags().StringVar(&fl.cpuProfile, "cpuprofile", "", "write a CPU profile (pprof) to this file")
	cmd.Flags().StringVar(&fl.memProfile, "memprofile", "", "write a heap profile (pprof) to this file at the end")
	cmd.Flags().StringVar(&fl.mutexProfile, "mutexprofile", "", "write a mutex contention profile (pprof) to this file at the end")
	cmd.Flags().StringVar(&fl.pprofAddr, "pprof-addr", "", "serve net/http/pprof under /debug/pprof/ on host:port while the job runs; :port binds loopback")
	cmd.Flags().StringVar(&fl.metricsAddr, "metrics-addr", "", "serve Prometheus /metrics, /healthz and /readyz on host:port while the job runs; :port binds loopback (0.0.0.0:port serves every interface)")
	cmd.Flags().DurationVar(&fl.statusInterval, "status-interval", 5*time.Second, "period of the status lines when standard error is not a terminal (0 or less: none)")
	cmd.Flags().StringVar(&fl.restore, "restore", "", "resume from a checkpoint: latest (the newest valid one in checkpoint.dir) or a checkpoint directory")
	cmd.Flags().StringVar(&fl.controlAddr, "control-addr", "", "serve the control endpoint (JSON over HTTP: streamd ctl, docs/CONTROL.md) on host:port; :port binds loopback; another address needs --control-token")
	cmd.Flags().StringVar(&fl.controlToken, "control-token", "", "the token every control request must carry (Authorization: Bearer TOKEN); required for a non-loopback --control-addr")
	cmd.Flags().StringVar(&fl.elasticLog, "elastic-log", "", "write the region's reconfiguration timeline (CSV: a line per elastic controller period, channel change, rebalance plan and step) to this file, and a PNG plot of it beside (same name, .png)")
	return cmd
}

func runJob(ctx context.Context, path string, fl runFlags, stderr io.Writer) error {
	if fl.channels < 0 {
		return usageErr(fmt.Errorf("--channels must be between 1 and 1024, not %d", fl.channels))
	}
	var controlAddr string
	if fl.controlAddr != "" {
		var err error
		if controlAddr, err = controlListenAddr(fl.controlAddr, fl.controlToken); err != nil {
			return usageErr(err)
		}
	} else if fl.controlToken != "" {
		return usageErr(errors.New("--control-token without --control-addr: there is no control endpoint to protect"))
	}
	f, err := jobfile.Load(path)
	if err != nil {
		return usageErr(err)
	}
	if fl.restore != "" && fl.restore != "latest" {
		if err := checkpointArg("--restore", fl.restore); err != nil {
			return usageErr(err)
		}
	}
	say := func(msg string) { fmt.Fprintln(stderr, "streamd:", msg) }
	opts := jobfile.Options{Channels: fl.channels, SourceParallelism: fl.sourcePar, OutputWorkers: fl.outWorkers, Restore: fl.restore, Warn: say,
		Cores: runtime.UsableCores()}
	if !fl.quiet {
		opts.Info = say
	}
	if fl.elasticLog != "" {
		// Its directory is created, as the sinks' are.
		if err := os.MkdirAll(filepath.Dir(fl.elasticLog), 0o755); err != nil {
			return usageErr(fmt.Errorf("elastic log: %w", err))
		}
		lf, err := os.Create(fl.elasticLog)
		if err != nil {
			return usageErr(fmt.Errorf("elastic log: %w", err))
		}
		defer func() {
			lf.Close()
			// A plot beside the timeline: channels, throughput, congestion.
			if in, err := os.Open(fl.elasticLog); err == nil {
				defer in.Close()
				png := strings.TrimSuffix(fl.elasticLog, filepath.Ext(fl.elasticLog)) + ".png"
				if out, err := os.Create(png); err == nil {
					if err := perf.PlotTimeline(in, out); err != nil {
						os.Remove(png) // too short a run to plot
					}
					out.Close()
				}
			}
		}()
		opts.ElasticLog = lf
	}
	job, err := f.Build(opts)
	switch {
	case errors.Is(err, plan.ErrCheckpointMismatch):
		return restoreErr(err)
	case errors.Is(err, snapshot.ErrCorrupt) || errors.Is(err, core.ErrOutputDamaged):
		return restoreErr(err) // the job file is fine; its checkpoints or output are not
	case err != nil:
		return usageErr(err)
	}
	if fl.elasticLog != "" && !writesTimeline(job) {
		say("--elastic-log: the job has no elastic controller (region.elastic with policy levels or ds2), random_every or region.rebalance, so " +
			fl.elasticLog + " gets rows only for changes asked for through the control plane")
	}
	job.Log = newLogger(stderr, fl.logLevel)
	ropts := []runtime.Option{place(f, job)} // how the job runs
	if os.Getenv("GOGC") == "" {
		// The data path recycles its batches; what the GC scans is mostly
		// state and pooled buffers. A lazier GC costs memory, not latency.
		debug.SetGCPercent(400)
	}
	if fl.cpuProfile != "" {
		pf, err := os.Create(fl.cpuProfile)
		if err != nil {
			return usageErr(fmt.Errorf("cpu profile: %w", err))
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return jobErr(err)
		}
		defer pprof.StopCPUProfile()
	}
	if fl.mutexProfile != "" {
		mf, err := os.Create(fl.mutexProfile)
		if err != nil {
			return usageErr(fmt.Errorf("mutex profile: %w", err))
		}
		defer mf.Close()
		defer goruntime.SetMutexProfileFraction(goruntime.SetMutexProfileFraction(5))
		defer pprof.Lookup("mutex").WriteTo(mf, 0)
	}
	obs, err := observe(job, fl, stderr)
	if err != nil {
		return usageErr(err)
	}
	defer obs.close()
	var ctl *controlServer
	if controlAddr != "" {
		if reg := job.Region; reg != nil && len(reg.Key) > 0 && reg.Rebalance == nil {
			// The control plane's rebalance needs the channels' per key
			// group counts (balance.go); nothing runs on its own.
			reg.Rebalance = &plan.Rebalance{}
		}
		if ctl, err = listenControl(controlAddr, fl.controlToken, job, f); err != nil {
			return usageErr(err)
		}
		defer ctl.close()
		ropts = append(ropts, runtime.OnStart(ctl.started))
		if !fl.quiet {
			say("control on http://" + ctl.addr() + "/v1/")
		}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ropts = append(ropts, runtime.OnStart(obs.started))
	rep, err := runtime.Run(ctx, job, ropts...)
	obs.end()
	if ctl != nil {
		ctl.end()
	}
	if fl.memProfile != "" {
		if mf, merr := os.Create(fl.memProfile); merr == nil {
			pprof.WriteHeapProfile(mf)
			mf.Close()
		}
	}
	if rep != nil && !fl.quiet {
		printReport(stderr, rep, err, f.Outputs())
	}
	if err != nil {
		if errors.Is(err, runtime.ErrStopped) {
			return &exitError{code: exitStopped, err: fmt.Errorf("%w; its checkpoints and the output committed up to it are kept: --restore latest resumes it", err)}
		}
		if errors.Is(err, runtime.ErrInterrupted) {
			if job.Checkpoint != nil && job.Checkpoint.Store != nil {
				return jobErr(fmt.Errorf("%w (output discarded; its checkpoints and committed output are kept: --restore latest resumes it)", err))
			}
			return jobErr(fmt.Errorf("%w (output discarded)", err))
		}
		if errors.Is(err, plan.ErrCheckpointMismatch) || errors.Is(err, core.ErrOutputDamaged) {
			return restoreErr(err)
		}
		return jobErr(err)
	}
	return nil
}

// restoreErr classifies a refused restore: a job file that does not fit
// its checkpoints is a usage error (exit 2), with what to do; damaged
// checkpoints or committed output (their messages say what to do) are a
// failure (exit 1).
func restoreErr(err error) error {
	if errors.Is(err, plan.ErrCheckpointMismatch) {
		return usageErr(fmt.Errorf("%w; restore with the job file that took the checkpoint, or run without --restore (after removing the checkpoint directory) to start afresh", err))
	}
	return jobErr(err)
}

func printReport(w io.Writer, r *runtime.Report, err error, outputs []jobfile.Output) {
	state := "done"
	switch {
	case r.Interrupted:
		state = "interrupted"
	case errors.Is(err, runtime.ErrStopped):
		state = "stopped at a savepoint"
	case err != nil:
		state = "failed"
	}
	fmt.Fprintf(w, "job %s: %s in %s — %d records in (%.0f records/s), %d out\n",
		r.Job, state, r.Wall.Round(time.Millisecond), r.RecordsIn, r.Throughput(), r.RecordsOut)
	if len(r.Operators) > 0 {
		fmt.Fprintln(w, "operators:")
		for _, o := range r.Operators {
			fmt.Fprintf(w, "  %-6s %-32s in %12d  out %12d", o.Stage, o.Name, o.In, o.Out)
			for k, v := range o.Stats {
				fmt.Fprintf(w, "  %s %d", k, v)
			}
			fmt.Fprintln(w)
		}
	}
	if len(r.Channels) > 0 {
		fmt.Fprintln(w, "channels:")
		for i, c := range r.Channels {
			fmt.Fprintf(w, "  %3d  records %12d  busy %10s  splitter blocked %10s\n", i, c.Records,
				time.Duration(c.BusyNs).Round(time.Microsecond), time.Duration(c.BlockedNs).Round(time.Microsecond))
		}
	}
	if r.Rescales > 0 {
		fmt.Fprintf(w, "rescales: %d, channel pause p50 %s, p99 %s, max %s; source drain wait p50 %s, max %s\n", r.Rescales,
			r.PauseP50, r.PauseP99, r.PauseMax, r.DrainP50, r.DrainMax)
	}
	if rb := r.Rebalance; rb != nil {
		fmt.Fprintf(w, "rebalance: %d plans, %d steps, %d key groups moved (%s of state), step pause p50 %s, p99 %s, max %s; gains held %d (waited later %d)\n",
			rb.Plans, rb.Steps, rb.Groups, byteSize(rb.Bytes), rb.PauseP50, rb.PauseP99, rb.PauseMax, rb.Holds, rb.HoldWaits)
		if p := rb.First; p != nil {
			fmt.Fprintf(w, "  before: records per channel %v (skew %.2f); planned %v (skew %.2f, target %.2f)\n", p.Loads, p.Before, p.Planned, p.After, p.Target)
		}
		if len(rb.Latest) > 0 {
			fmt.Fprintf(w, "  last period: records per channel %v (skew %.2f)\n", rb.Latest, rb.LatestSkew)
		}
	}
	if r.Checkpoints > 0 || r.CheckpointTimeouts > 0 || r.CheckpointFailures > 0 {
		fmt.Fprintf(w, "checkpoints: %d (%d timed out, %d failed), duration p50 %s, p99 %s, max %s, barrier pause p99 %s, copy-on-write stalls %d (p99 %s, max %s)\n", r.Checkpoints, r.CheckpointTimeouts, r.CheckpointFailures,
			r.CheckpointP50.Round(time.Microsecond), r.CheckpointP99.Round(time.Microsecond), r.CheckpointMax.Round(time.Microsecond), r.SnapshotPauseP99.Round(time.Microsecond),
			r.CopyOnWriteStalls, r.StallP99.Round(time.Microsecond), r.StallMax.Round(time.Microsecond))
	}
	printCPU(w, r)
	fmt.Fprintf(w, "errors: skipped %d, dead letters %d, late %d", r.Skipped, r.DeadLetters, r.Late)
	if r.PartlyLate > 0 {
		fmt.Fprintf(w, ", partly late %d (missing from windows that had fired)", r.PartlyLate)
	}
	if r.LateFired > 0 {
		fmt.Fprintf(w, ", late within allowed lateness %d (windows fired again)", r.LateFired)
	}
	fmt.Fprintln(w)
	printOutputs(w, r, err, outputs)
}

// printOutputs names where the run's output went: the sink's file or
// directory of parts once the run has succeeded (a failed or interrupted
// run discards it), and the dead-letter file when records went to it.
func printOutputs(w io.Writer, r *runtime.Report, err error, outputs []jobfile.Output) {
	for _, o := range outputs {
		switch {
		case o.What == "dead letters" && r.DeadLetters > 0:
			fmt.Fprintf(w, "dead letters: %s\n", o.Path)
		case o.What == "output" && err == nil && o.Where != "":
			fmt.Fprintf(w, "output: %s\n", o.Where)
		case o.What == "output" && err == nil && o.Parts > 0:
			fmt.Fprintf(w, "output: %s (%d part files)\n", o.Path, o.Parts)
		case o.What == "output" && err == nil:
			fmt.Fprintf(w, "output: %s\n", o.Path)
		}
	}
}

// printCPU writes each stage's thread CPU time (and the part spent waiting
// on rings), the process's CPU outside the stages, and the serial fraction.
func printCPU(w io.Writer, r *runtime.Report) {
	if len(r.Stages) == 0 || r.ProcessCPU <= 0 {
		return
	}
	sec := func(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }
	fmt.Fprintf(w, "cpu: %s in all\n", sec(r.ProcessCPU))
	var staged time.Duration
	var serial []string // the stages that run once, as the report names them
	for _, s := range r.Stages {
		name := s.Stage
		switch {
		case s.Stage == "source" && s.Replicated:
			name = fmt.Sprintf("worker %d", s.Index) // a source worker
		case s.Replicated || s.Index > 0:
			name = fmt.Sprintf("%s %d", s.Stage, s.Index)
		}
		if !s.Replicated && !slices.Contains(serial, name) {
			serial = append(serial, name)
		}
		staged += s.CPU
		fmt.Fprintf(w, "  %-12s %10s  waiting %10s", name, sec(s.CPU), sec(s.Wait))
		if s.Stage == "source" {
			fmt.Fprintf(w, "  records %12d", s.Records)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  %-12s %10s  (outside the stages: the Go scheduler and garbage collector, and parse workers or the checkpoint writer where the job has them)\n", "other", sec(max(0, r.ProcessCPU-staged)))
	if r.SerialFraction > 0 {
		cores := runtime.UsableCores()
		fmt.Fprintf(w, "serial fraction %.1f %% (the work of the stages that run once — %s — over all work; Amdahl: at most %.1fx on this machine's %d cores, %.1fx on 14)\n",
			100*r.SerialFraction, strings.Join(serial, ", "), runtime.AmdahlBound(r.SerialFraction, cores), cores, runtime.AmdahlBound(r.SerialFraction, 14))
	}
}

// writesTimeline says whether job's region changes itself, and so
// writes rows into the --elastic-log timeline without being asked through
// the control plane: an elastic controller (the level controller or DS2),
// a random_every schedule or a rebalancer (region.rebalance).
func writesTimeline(job *plan.Job) bool {
	reg := job.Region
	if reg == nil || reg.Timeline == nil {
		return false
	}
	if reg.Schedule != nil || (reg.Rebalance != nil && len(reg.Key) > 0) {
		return true
	}
	return reg.Elastic != nil && reg.Elastic.Policy != "" && reg.Elastic.Policy != "off"
}

// byteSize writes n bytes as B, KiB, MiB or GiB.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
