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
// PNG of three panels sharing the time axis: channels, throughput
// (records/s) and congestion index.
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
	plots := make([][]*plot.Plot, len(series))
	for i, s := range series {
		var xys plotter.XYs
		for _, r := range rows[1:] {
			x, err1 := strconv.ParseFloat(r[col["t_s"]], 64)
			y, err2 := strconv.ParseFloat(r[col[s.name]], 64)
			if err1 != nil || err2 != nil {
				return fmt.Errorf("timeline: bad row %v", r)
			}
			xys = append(xys, plotter.XY{X: x, Y: y})
		}
		p := plot.New()
		p.Y.Label.Text = s.label
		if i == len(series)-1 {
			p.X.Label.Text = "time (s)"
		}
		if s.name == "throughput" {
			p.Y.Tick.Marker = siTicks{}
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		if s.name == "channels" {
			line.StepStyle = plotter.PreStep
		}
		p.Add(line, plotter.NewGrid())
		p.Y.Min = 0
		plots[i] = []*plot.Plot{p}
	}
	img := vgimg.New(8*vg.Inch, 7*vg.Inch)
	dc := draw.New(img)
	t := draw.Tiles{Rows: len(series), Cols: 1, PadY: vg.Millimeter * 2, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	canvases := plot.Align(plots, t, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}
