package perf

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// PlotTimeline draws an elastic timeline (the CSV `streamd run
// --elastic-log` writes: t_s, channels, congestion, throughput, …) as a
// PNG of panels sharing the time axis: channels, throughput (records/s),
// congestion index and, when the timeline has rebalance rows or a skew
// column with values, the skew (max/mean channel load per period) with a
// mark per rebalance plan (skew measured and planned) and per step. A
// field left empty (a figure a row does not have) is skipped.
func PlotTimeline(in io.Reader, w io.Writer) error {
	rows, err := csv.NewReader(in).ReadAll()
	if err != nil {
		return fmt.Errorf("timeline: %w", err)
	}
	if len(rows) < 2 {
		return fmt.Errorf("timeline: no periods")
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	series := []struct{ name, label string }{{"channels", "channels"}, {"throughput", "records/s"}, {"congestion", "congestion index"}}
	for _, s := range append(series, struct{ name, label string }{"t_s", ""}) {
		if _, ok := col[s.name]; !ok {
			return fmt.Errorf("timeline: no column %q", s.name)
		}
	}
	// points is the (t, column) pairs of the rows keep accepts, skipping
	// empty fields.
	points := func(name string, keep func(rule string) bool) (plotter.XYs, error) {
		var xys plotter.XYs
		c, ok := col[name]
		if !ok {
			return nil, nil
		}
		for _, r := range rows[1:] {
			rule := ""
			if i, ok := col["rule"]; ok {
				rule = r[i]
			}
			if r[c] == "" || !keep(rule) {
				continue
			}
			x, err1 := strconv.ParseFloat(r[col["t_s"]], 64)
			y, err2 := strconv.ParseFloat(r[c], 64)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("timeline: bad row %v", r)
			}
			xys = append(xys, plotter.XY{X: x, Y: y})
		}
		return xys, nil
	}
	all := func(string) bool { return true }
	var plots [][]*plot.Plot
	for _, s := range series {
		xys, err := points(s.name, all)
		if err != nil {
			return err
		}
		p := plot.New()
		p.Y.Label.Text = s.label
		if s.name == "throughput" {
			p.Y.Tick.Marker = siTicks{}
		}
		if len(xys) > 0 {
			line, err := plotter.NewLine(xys)
			if err != nil {
				return err
			}
			if s.name == "channels" {
				line.StepStyle = plotter.PreStep
			}
			p.Add(line)
		}
		p.Add(plotter.NewGrid())
		p.Y.Min = 0
		plots = append(plots, []*plot.Plot{p})
	}
	if p, err := skewPlot(points); err != nil {
		return err
	} else if p != nil {
		plots = append(plots, []*plot.Plot{p})
	}
	plots[len(plots)-1][0].X.Label.Text = "time (s)"
	img := vgimg.New(8*vg.Inch, vg.Length(2.3*float64(len(plots)))*vg.Inch)
	dc := draw.New(img)
	t := draw.Tiles{Rows: len(plots), Cols: 1, PadY: vg.Millimeter * 2, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	canvases := plot.Align(plots, t, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

// skewPlot is the skew panel: the controller's periods' skew as a line,
// a rebalance plan as a circle (skew measured) and a triangle (planned),
// a rebalance step as a cross at skew 1. Nil when the timeline has none
// of them.
func skewPlot(points func(string, func(string) bool) (plotter.XYs, error)) (*plot.Plot, error) {
	isPlan := func(rule string) bool { return rule == "rebalance" }
	isStep := func(rule string) bool { return rule == "rebalance-step" }
	periods, err := points("skew", func(rule string) bool { return !isPlan(rule) && !isStep(rule) })
	if err != nil {
		return nil, err
	}
	before, err := points("skew", isPlan)
	if err != nil {
		return nil, err
	}
	planned, err := points("planned_skew", isPlan)
	if err != nil {
		return nil, err
	}
	steps, err := points("target", isStep) // any column every step row has
	if err != nil {
		return nil, err
	}
	if len(periods)+len(before)+len(steps) == 0 {
		return nil, nil
	}
	for i := range steps {
		steps[i].Y = 1
	}
	p := plot.New()
	p.Y.Label.Text = "skew (max/mean)"
	p.Add(plotter.NewGrid())
	if len(periods) > 0 {
		line, err := plotter.NewLine(periods)
		if err != nil {
			return nil, err
		}
		p.Add(line)
	}
	for _, s := range []struct {
		xys   plotter.XYs
		shape draw.GlyphDrawer
		name  string
	}{{before, draw.CircleGlyph{}, "rebalance: skew"}, {planned, draw.TriangleGlyph{}, "planned"}, {steps, draw.CrossGlyph{}, "step"}} {
		if len(s.xys) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(s.xys)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle.Shape, sc.GlyphStyle.Radius = s.shape, vg.Points(3)
		p.Add(sc)
		p.Legend.Add(s.name, sc)
	}
	p.Legend.Top = true
	p.Y.Min = 0
	return p, nil
}
