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
