package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"streamd/core/source"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"streamd/perf"
	_ "streamd/perf/nexmark" // registers the Nexmark workloads
)

type benchFlags struct {
	list       bool
	duration   time.Duration
	rate       float64
	count      int64
	channels   int
	seed       uint64
	out        string
	data       string
	unpinned   bool
	cpuProfile string
	memProfile string
	logLevel   slog.Level // --log-level, -v
}

func newBenchCmd(lf *logFlags) *cobra.Command {
	var fl benchFlags
	cmd := &cobra.Command{
		Use:   "bench workload [flags] | bench --list",
		Short: "Run a benchmark workload: throughput, latency percentiles, plots",
		Long: `Run a benchmark workload and report records in/out, records/s (also per
core of CPU used) and latency percentiles (from each batch's entry stamp, or
in open loop (--rate) its intended send time, to the sink). Writes
report.json, latency.hgrm, latency.png and throughput.png into --out.

--duration 0 sets no time limit: the run lasts until the source ends (flights
and ring end by themselves; the generator workloads with --count N) or until
Ctrl-C, which ends the run normally, with its reports. A generator workload
without --count then runs until Ctrl-C. elastic spreads its rate steps over
6s when --duration is 0.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if fl.list {
				return cobra.NoArgs(cmd, args)
			}
			return oneArg("bench: expected a workload, one of "+strings.Join(perf.Names(), ", ")+" (streamd bench WORKLOAD; streamd bench --list says what each runs)")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if fl.list {
				return listWorkloads(cmd.OutOrStdout())
			}
			level, _, err := lf.Level(cmd)
			if err != nil {
				return err
			}
			fl.logLevel = level
			return runBench(cmd.Context(), args[0], fl, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.BoolVar(&fl.list, "list", false, "list the workloads")
	f.DurationVar(&fl.duration, "duration", 5*time.Second, "stop after this long (a source that ends first ends the run); 0: no time limit (see above)")
	f.Float64Var(&fl.rate, "rate", 0, "open loop at this many records/s (0: closed loop, as fast as possible; elastic: its base rate R, 500000 by default; ring has no rate)")
	f.Int64Var(&fl.count, "count", 0, "records from the source (0: the workload's default, unbounded for generators)")
	f.IntVar(&fl.channels, "channels", 0, "channel count of the parallel region (0: the workload's default)")
	f.Uint64Var(&fl.seed, "seed", 0, "generator seed")
	f.StringVar(&fl.out, "out", "", "directory for the reports (default ./bench-out/<workload>)")
	f.StringVar(&fl.data, "data", "", "directory of the flights data (default $STREAMD_DATA, or ../shared/data)")
	f.BoolVar(&fl.unpinned, "unpinned", false, "do not pin stages to cores")
	f.StringVar(&fl.cpuProfile, "cpuprofile", "", "write a CPU profile (pprof) of the run to this file")
	f.StringVar(&fl.memProfile, "memprofile", "", "write a heap profile (pprof) to this file at the end")
	return cmd
}

func listWorkloads(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, n := range perf.Names() {
		wl, _ := perf.Lookup(n)
		fmt.Fprintf(tw, "%s\t%s\n", n, wl.Description)
	}
	return tw.Flush()
}

func runBench(ctx context.Context, name string, fl benchFlags, stdout, stderr io.Writer) error {
	w, err := perf.Lookup(name)
	if err != nil {
		return usageErr(fmt.Errorf("bench: %w", err))
	}
	if fl.duration < 0 || fl.rate < 0 || fl.count < 0 || fl.channels < 0 {
		return usageErr(errors.New("--duration, --rate, --count and --channels must not be negative"))
	}
	if math.IsNaN(fl.rate) || fl.rate > source.MaxRate { // +Inf too
		return usageErr(fmt.Errorf("--rate %g: expected a number of records/s up to %g", fl.rate, float64(source.MaxRate)))
	}
	out := fl.out
	if out == "" {
		out = filepath.Join("bench-out", name)
	}
	opt := perf.Options{
		Duration: fl.duration, Rate: fl.rate, Count: fl.count, Channels: fl.channels, Seed: fl.seed,
		DataDir: fl.data, OutDir: out, Unpinned: fl.unpinned,
		Log: newLogger(stderr, fl.logLevel),
	}
	if err := w.Check(opt); err != nil { // before the profile file is made
		return usageErr(err)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400) // as streamd run does
	}
	stopProfile := func() {}
	if fl.cpuProfile != "" {
		pf, err := os.Create(fl.cpuProfile)
		if err != nil {
			return usageErr(fmt.Errorf("cpu profile: %w", err))
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return jobErr(err)
		}
		// The profile covers the run, not the plotting after it.
		stopProfile = sync.OnceFunc(pprof.StopCPUProfile)
		defer stopProfile()
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := perf.RunContext(ctx, w, opt)
	stopProfile()
	if fl.memProfile != "" {
		if mf, merr := os.Create(fl.memProfile); merr == nil {
			pprof.WriteHeapProfile(mf)
			mf.Close()
		}
	}
	if res == nil {
		return usageErr(err)
	}
	res.WriteTable(stdout)
	if werr := res.WriteFiles(out); werr != nil {
		return jobErr(fmt.Errorf("reports: %w", werr))
	}
	fmt.Fprintf(stdout, "reports\t%s/{%s,%s,%s,%s}\n", out, perf.ReportFile, perf.HgrmFile, perf.LatencyPlot, perf.ThroughputPlot)
	if err != nil {
		return jobErr(err)
	}
	return nil
}
