package perf

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"text/tabwriter"
	"time"
)

// Files WriteFiles writes into its directory.
const (
	ReportFile     = "report.json"
	HgrmFile       = "latency.hgrm"
	LatencyPlot    = "latency.png"
	ThroughputPlot = "throughput.png"
)

// WriteTable writes the run's summary for a terminal: records, wall time,
// throughput (per core used, too) and latency percentiles.
func (r *Result) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	m := r.Machine
	fmt.Fprintf(tw, "workload\t%s\n", r.Workload)
	fmt.Fprintf(tw, "machine\t%s; %d CPUs, %d usable, GOMAXPROCS %d, pinned %v, %s\n",
		orDash(m.CPUModel), m.NumCPU, m.Cores, m.GOMAXPROCS, m.Pinned, m.GoVersion)
	mode := r.Mode
	if mode == "" { // a result from before Mode
		mode = DefaultMode(r.Options)
	}
	end := "source ended"
	switch {
	case r.TimeUp:
		end = "stopped by time"
	case r.Interrupted:
		end = "interrupted"
	}
	fmt.Fprintf(tw, "mode\t%s (%s)\n", mode, end)
	fmt.Fprintf(tw, "records in / out\t%d / %d\n", r.RecordsIn, r.RecordsOut)
	fmt.Fprintf(tw, "wall\t%s\n", time.Duration(r.WallSeconds*1e9).Round(time.Millisecond))
	fmt.Fprintf(tw, "records/s\t%s\n", si(r.RecordsPerSec))
	fmt.Fprintf(tw, "cpu\t%.2f s (%.2f cores)\n", r.CPUSeconds, r.CoresUsed)
	fmt.Fprintf(tw, "records/s per core\t%s\n", si(r.RecordsPerSecPerCore))
	if r.Rescales > 0 {
		fmt.Fprintf(tw, "rescales\t%d\n", r.Rescales)
	}
	if r.SerialFraction > 0 {
		fmt.Fprintf(tw, "serial fraction\t%.1f %% (work of the stages that run once over all work)\n", 100*r.SerialFraction)
	}
	l := r.Latency
	if l.Count > 0 {
		fmt.Fprintf(tw, "latency (µs)\tp50 %d  p90 %d  p99 %d  p99.9 %d  p99.99 %d  max %d  (%d records)\n",
			l.P50, l.P90, l.P99, l.P999, l.P9999, l.Max, l.Count)
	} else {
		fmt.Fprintf(tw, "latency (µs)\t- (no records reached the sink)\n")
	}
	keys := make([]string, 0, len(r.Extra))
	for k := range r.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\n", k, si(r.Extra[k]))
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// si writes v with a k/M/G suffix.
func si(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.2f G", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.2f M", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1f k", v/1e3)
	}
	return fmt.Sprintf("%.1f", v)
}

// WriteJSON writes the whole result, throughput series included, as
// indented JSON.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteHgrm writes the latency distribution in HdrHistogram's percentile
// format (values in µs, 5 ticks per half distance), the format
// HdrHistogram's plotter reads.
func (r *Result) WriteHgrm(w io.Writer) error {
	_, err := r.hist.PercentilesPrint(w, 5, 1)
	return err
}

// WriteFiles writes report.json, latency.hgrm, latency.png and
// throughput.png into dir, creating it.
func (r *Result) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{
		{ReportFile, r.WriteJSON},
		{HgrmFile, r.WriteHgrm},
		{LatencyPlot, r.PlotLatency},
		{ThroughputPlot, r.PlotThroughput},
	} {
		if err := writeFile(filepath.Join(dir, f.name), f.write); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}
