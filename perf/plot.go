package perf

import (
	"io"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// PlotLatency draws the latency distribution as HdrHistogram's plotter
// does: latency (µs) against percentile, the x axis being 1/(1-p) on a log
// scale so that the tail (99%, 99.9%, …) gets as much room as the median.
// It writes a PNG.
func (r *Result) PlotLatency(w io.Writer) error {
	p := plot.New()
	p.Title.Text = r.Workload + ": latency by percentile"
	p.X.Label.Text = "percentile"
	p.Y.Label.Text = "latency (µs)"
	var xys plotter.XYs
	maxX := 1.0
	if r.hist != nil && r.hist.TotalCount() > 0 {
		for _, b := range r.hist.CumulativeDistributionWithTicks(5) {
			q := b.Quantile / 100
			if q >= 1 {
				continue
			}
			x := 1 / (1 - q)
			xys = append(xys, plotter.XY{X: x, Y: float64(b.ValueAt)})
			maxX = max(maxX, x)
		}
	}
	if len(xys) > 0 {
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		p.Add(l, plotter.NewGrid())
		p.X.Scale = plot.LogScale{}
		p.X.Min, p.X.Max = 1, max(maxX, 10)
		var ticks []plot.Tick
		for _, t := range []struct {
			x float64
			s string
		}{{1, "0%"}, {2, "50%"}, {10, "90%"}, {100, "99%"}, {1e3, "99.9%"}, {1e4, "99.99%"}, {1e5, "99.999%"}, {1e6, "99.9999%"}} {
			if t.x <= p.X.Max {
				ticks = append(ticks, plot.Tick{Value: t.x, Label: t.s})
			}
		}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		p.Y.Min = 0
	}
	return savePNG(p, w)
}

// PlotThroughput draws records/s over the run (one point per
// SampleEvery). It writes a PNG.
func (r *Result) PlotThroughput(w io.Writer) error {
	p := plot.New()
	p.Title.Text = r.Workload + ": throughput"
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = "records/s"
	xys := make(plotter.XYs, 0, len(r.Throughput)+1)
	xys = append(xys, plotter.XY{})
	for _, s := range r.Throughput {
		xys = append(xys, plotter.XY{X: s.T, Y: s.RecordsPerSec})
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	p.Add(l, plotter.NewGrid())
	p.Y.Min = 0
	p.Y.Tick.Marker = siTicks{}
	return savePNG(p, w)
}

func savePNG(p *plot.Plot, w io.Writer) error {
	wt, err := p.WriterTo(8*vg.Inch, 4*vg.Inch, "png")
	if err != nil {
		return err
	}
	_, err = wt.WriteTo(w)
	return err
}

// siTicks are the default ticks labelled with k/M/G suffixes.
type siTicks struct{}

func (siTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strings.ReplaceAll(si(ts[i].Value), " ", "")
		}
	}
	return ts
}
