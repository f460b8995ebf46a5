package sim

import (
	"os"
	"testing"

	"streamd/elastic"
)

func TestExplore(t *testing.T) {
	if os.Getenv("EXPLORE") == "" {
		t.Skip()
	}
	for _, name := range []string{"levels", "ds2"} {
		cfg := elastic.DefaultConfig()
		cfg.Cores = 32
		p, err := elastic.New(name, cfg)
		if err != nil {
			t.Fatal(err)
		}
		m := Model{ChannelRate: 1000, Efficiency: 0.97, Noise: 0.02, Seed: 1}
		var load Load
		switch os.Getenv("EXPLORE") {
		case "step":
			load = Schedule(Point{0, 1500}, Point{20, 5000}, Point{50, 15000}, Point{80, 3000})
		case "sine":
			load = Sine(6000, 0.3, 10)
		case "slowsine":
			load = Sine(6000, 0.3, 40)
		case "bottle":
			m.Bottleneck = 5000
			load = Constant(20000)
		}
		tl := Run(m, p, load, 120)
		t.Log(name)
		tl.Write(os.Stdout)
	}
}
