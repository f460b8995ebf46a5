package jobfile

import (
	"testing"

	"streamd/core/plan"
	"streamd/elastic"
)

// The elastic keys of the decision window, cool-down, gain rule and memory
// reach elastic.Config; left out, they keep elastic.DefaultConfig's values.
func TestElasticKeys(t *testing.T) {
	build := func(keys string) elastic.Config {
		t.Helper()
		text := "source:\n  generator: {count: 1000}\nregion:\n  channels: 2\n  key_by: [key]\n  elastic:\n    max_channels: 8\n" +
			keys + "  ops:\n    - filter: value > 3\nsink:\n  discard: {}\n"
		f, err := Parse("job.yaml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		reg := &plan.Region{Channels: 2, Key: []string{"key"}, Groups: 4096}
		if err := f.buildElastic(f.Spec.Region.Elastic, reg, 0, 16); err != nil {
			t.Fatal(err)
		}
		return reg.Elastic.Config
	}
	got := build("    window_periods: 5\n    window_statistic: mean\n    cooldown_periods: 7\n    warmup_periods: 0\n" +
		"    drain_periods: 12\n    min_gain: 0.25\n    memory_periods: 90\n    scale_down_periods: 45\n")
	if got.WindowPeriods != 5 || got.Statistic != elastic.StatMean || got.CoolDownPeriods != 7 || got.WarmUpPeriods != 0 ||
		got.DrainPeriods != 12 || got.MinGain != 0.25 || got.MemoryPeriods != 90 || got.ScaleDownPeriods != 45 {
		t.Errorf("keys set: %+v", got)
	}
	def, want := build(""), elastic.DefaultConfig()
	if def.WindowPeriods != want.WindowPeriods || def.Statistic != want.Statistic || def.CoolDownPeriods != want.CoolDownPeriods ||
		def.WarmUpPeriods != want.WarmUpPeriods || def.DrainPeriods != want.DrainPeriods || def.MinGain != want.MinGain ||
		def.MemoryPeriods != want.MemoryPeriods || def.ScaleDownPeriods != want.ScaleDownPeriods {
		t.Errorf("defaults: %+v, want those of %+v", def, want)
	}
}
