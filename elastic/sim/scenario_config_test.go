package sim

import "streamd/elastic"

// setConfigExtras sets the config keys of the controllers' window,
// cool-down, gain rule and memory.
func setConfigExtras(cfg *elastic.Config, p *argParser) {
	cfg.WindowPeriods = p.int("window", cfg.WindowPeriods)
	if v, ok := p.args["stat"]; ok {
		cfg.Statistic = elastic.Statistic(v)
	}
	cfg.CoolDownPeriods = p.int("cooldown", cfg.CoolDownPeriods)
	cfg.MinGain = p.float("gain", cfg.MinGain)
	cfg.MemoryPeriods = p.int("memory", cfg.MemoryPeriods)
}
