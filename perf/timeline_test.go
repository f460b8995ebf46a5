package perf

import (
	"bytes"
	"image/png"
	"strings"
	"testing"
)

func TestPlotTimeline(t *testing.T) {
	in := "t_s,channels,congestion,throughput,arrival_rate,level,rule,applied\n" +
		"1.0,1,0.0,300000,300000,0,hold,false\n2.0,1,0.8,5000000,5000000,1,P1,true\n3.0,2,0.3,8000000,8000000,2,P1,true\n"
	var out bytes.Buffer
	if err := PlotTimeline(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&out)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 500 || b.Dy() < 500 {
		t.Fatalf("image %v", b)
	}
	if err := PlotTimeline(strings.NewReader("t_s,channels\n1,1\n"), &out); err == nil {
		t.Fatal("missing columns accepted")
	}
}

// A timeline with rebalance rows (empty figures where a row has none)
// plots, with a fourth panel for the skew: it is taller than one without.
func TestPlotTimelineRebalance(t *testing.T) {
	head := "t_s,channels,congestion,throughput,arrival_rate,level,rule,applied,target,backlog,skew,planned_skew,groups,bytes,steps,reason\n"
	in := head +
		"1.000,2,0.0000,300000,300000,1,hold,false,2,0,1.4000,,,,,level 1 channels 2 rule hold\n" +
		"1.500,2,,,,-1,rebalance,true,2,,1.4000,1.0500,12,3072,2,\"rebalancer: skew 1.400 > target 1.100\"\n" +
		"1.600,2,,,,-1,rebalance-step,true,2,,,,6,1536,,step 1/2: rebalancer\n" +
		"1.700,2,,,,-1,rebalance-step,true,2,,,,6,1536,,step 2/2: rebalancer\n" +
		"2.000,2,0.0000,310000,310000,1,hold,false,2,0,1.0600,,,,,level 1 channels 2 rule hold\n" +
		"2.500,2,0.0000,310000,310000,-1,ctl:scale,true,3,0,,,,,,api\n"
	var with, without bytes.Buffer
	if err := PlotTimeline(strings.NewReader(in), &with); err != nil {
		t.Fatal(err)
	}
	old := "t_s,channels,congestion,throughput\n1,1,0,100\n2,2,0.5,200\n"
	if err := PlotTimeline(strings.NewReader(old), &without); err != nil {
		t.Fatal(err)
	}
	a, err := png.Decode(&with)
	if err != nil {
		t.Fatal(err)
	}
	b, err := png.Decode(&without)
	if err != nil {
		t.Fatal(err)
	}
	if a.Bounds().Dy() <= b.Bounds().Dy() {
		t.Fatalf("with rebalance rows %v, without %v: want a taller plot (a skew panel)", a.Bounds(), b.Bounds())
	}
}
