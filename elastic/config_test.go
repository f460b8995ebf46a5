package elastic

import (
	"errors"
	"strings"
	"testing"
)

func TestDefaultConfig(t *testing.T) {
	cfg := DefaultConfig()
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "max_channels or cores") {
		t.Fatalf("default config without a limit: got %v, want a missing-limit error", err)
	}
	cfg.Cores = 8
	if err := cfg.Validate(); err != nil {
		t.Fatalf("default config with cores: %v", err)
	}
	if cfg.PeriodNs != 1e9 || cfg.CongestionThreshold != 0.1 || cfg.Sensitivity != 0.5 || !cfg.FastScaling ||
		cfg.MinChannels != 1 || cfg.ScaleDownPeriods != 30 || cfg.WarmUpPeriods != 1 || cfg.DrainPeriods != 30 ||
		cfg.WindowPeriods != 3 || cfg.Statistic != StatMedian || cfg.CoolDownPeriods != 3 || cfg.MinGain != 0.1 ||
		cfg.MemoryPeriods != 60 {
		t.Fatalf("defaults changed: %+v", cfg)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"period", func(c *Config) { c.PeriodNs = 0 }, "period"},
		{"window", func(c *Config) { c.WindowPeriods = 0 }, "window_periods"},
		{"statistic", func(c *Config) { c.Statistic = "p99" }, "window_statistic"},
		{"cooldown", func(c *Config) { c.CoolDownPeriods = 0 }, "cooldown_periods"},
		{"gain", func(c *Config) { c.MinGain = 1.5 }, "min_gain"},
		{"memory", func(c *Config) { c.MemoryPeriods = 0 }, "memory_periods"},
		{"threshold low", func(c *Config) { c.CongestionThreshold = 0 }, "congestion_threshold"},
		{"threshold high", func(c *Config) { c.CongestionThreshold = 1.5 }, "congestion_threshold"},
		{"sensitivity", func(c *Config) { c.Sensitivity = -1 }, "sensitivity"},
		{"min", func(c *Config) { c.MinChannels = 0 }, "min_channels"},
		{"max", func(c *Config) { c.MaxChannels = -2 }, "max_channels"},
		{"cores", func(c *Config) { c.Cores = -1 }, "cores"},
		{"no limit", func(c *Config) { c.Cores = 0 }, "max_channels"},
		{"min above limit", func(c *Config) { c.MinChannels = 9 }, "min_channels"},
		{"min between levels", func(c *Config) { c.MinChannels, c.MaxChannels = 7, 7 }, "min_channels"},
		{"initial", func(c *Config) { c.InitialChannels = 9 }, "initial_channels"},
		{"scale down", func(c *Config) { c.ScaleDownPeriods = 0 }, "scale_down_periods"},
		{"warm-up", func(c *Config) { c.WarmUpPeriods = -1 }, "warmup_periods"},
		{"drain", func(c *Config) { c.DrainPeriods = 0 }, "drain_periods"},
	} {
		cfg := DefaultConfig()
		cfg.Cores = 8
		c.edit(&cfg)
		err := cfg.Validate()
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), c.field+" = ") {
			t.Errorf("%s: got %v, want an ErrInvalidConfig naming %s", c.name, err, c.field)
		}
		for _, name := range []string{PolicyLevels, PolicyDS2, PolicyOff} {
			if _, err := New(name, cfg); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("%s: New(%q) = %v, want ErrInvalidConfig", c.name, name, err)
			}
		}
	}
}

func TestConfigLimit(t *testing.T) {
	for _, c := range []struct{ max, cores, want int }{{0, 0, 0}, {0, 8, 8}, {6, 0, 6}, {6, 8, 6}, {16, 8, 8}} {
		cfg := Config{MaxChannels: c.max, Cores: c.cores}
		if got := cfg.Limit(); got != c.want {
			t.Errorf("Limit(max %d, cores %d) = %d, want %d", c.max, c.cores, got, c.want)
		}
	}
}
