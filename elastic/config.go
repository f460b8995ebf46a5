package elastic

import (
	"errors"
	"fmt"
	"math"
)

// ErrInvalidConfig is wrapped by every error [Config.Validate] returns.
var ErrInvalidConfig = errors.New("elastic: invalid config")

// Config holds the parameters of every policy. Start from [DefaultConfig]
// and override; the field names in error messages are the job file's
// (snake_case) names.
type Config struct {
	// PeriodNs is the adaptation period, in ns (period; default 1 s). The
	// policies do not read clocks; the runtime uses it to pace Step, and the
	// measured Period.LengthNs is what the rates are computed from.
	PeriodNs int64
	// CongestionThreshold (congestion_threshold; default 0.1): a period whose
	// congestion index exceeds it is congested [TPDS14 §4.1]. The paper finds
	// values between 0.01 and 0.3 robust. Must be in (0, 1).
	CongestionThreshold float64
	// Sensitivity is the change sensitivity α (sensitivity; default 0.5)
	// [TPDS14 §4, P4]: a throughput change counts only when it exceeds α times
	// the ideal throughput of one channel (times the number of channels
	// added, when comparing levels). Smaller is more sensitive. Must be in
	// (0, 10].
	Sensitivity float64
	// FastScaling selects the level map (fast_scaling; default true)
	// [TPDS14 §4, P6]: N(L) = round(2^((L+1)/2)) = 1, 2, 3, 4, 6, 8, 11, 16,
	// 23, 32, … when true, N(L) = L+1 when false.
	FastScaling bool
	// MinChannels is the fewest channels the region may run with
	// (min_channels; default 1). The level controller's lowest level is the
	// smallest level with N(L) >= MinChannels.
	MinChannels int
	// MaxChannels caps the channel count (max_channels; 0, the default,
	// means no cap other than Cores).
	MaxChannels int
	// Cores is the number of cores the core allocator can lease to the
	// region's channels (cores; 0 means unknown: MaxChannels alone caps).
	// The limit is min(MaxChannels, Cores) over the non-zero ones; at least
	// one must be set.
	Cores int
	// InitialChannels is the channel count the region starts with
	// (initial_channels; 0, the default, means MinChannels). The level
	// controller starts at the smallest level with N(L) >= InitialChannels.
	InitialChannels int
	// ScaleDownPeriods is how many consecutive periods a decrease of the
	// load must be seen before a policy acts on it (scale_down_periods;
	// default 10, at least 1; 1 acts at once, as in [TPDS14]). Increases act
	// at once. It keeps a load that oscillates faster than this from moving
	// channels up and down every cycle; see the package sim tests.
	ScaleDownPeriods int
	// WarmUpPeriods is how many periods after a change of the channel count
	// [DS2] ignores (warmup_periods; default 1, may be 0): their metrics mix
	// the reconfiguration with steady processing. The level controller uses
	// every period, as in [TPDS14]; it relies on the runtime starting a fresh
	// period once a reconfiguration completes.
	WarmUpPeriods int
	// DrainPeriods is how many periods [DS2] allows for draining
	// Period.Backlog (drain_periods; default 10, at least 1): the target rate
	// is the offered rate plus Backlog / (DrainPeriods × period length).
	DrainPeriods int
}

// DefaultConfig returns the defaults documented on [Config]. Cores and
// MaxChannels are left 0: the runtime must set at least one.
func DefaultConfig() Config {
	return Config{
		PeriodNs:            1e9,
		CongestionThreshold: 0.1,
		Sensitivity:         0.5,
		FastScaling:         true,
		MinChannels:         1,
		ScaleDownPeriods:    10,
		WarmUpPeriods:       1,
		DrainPeriods:        10,
	}
}

// Limit is the most channels the region may run with: min(MaxChannels,
// Cores) over the non-zero ones, or 0 when neither is set.
func (c Config) Limit() int {
	switch {
	case c.MaxChannels > 0 && c.Cores > 0:
		return min(c.MaxChannels, c.Cores)
	case c.MaxChannels > 0:
		return c.MaxChannels
	}
	return max(c.Cores, 0)
}

// Map returns the level map the config selects.
func (c Config) Map() LevelMap { return LevelMap{Fast: c.FastScaling} }

// initial is the configured initial channel count (MinChannels when unset).
func (c Config) initial() int {
	if c.InitialChannels > 0 {
		return c.InitialChannels
	}
	return c.MinChannels
}

// Validate checks every field and returns all problems joined, each
// wrapping [ErrInvalidConfig] and naming the field and what was expected.
func (c Config) Validate() error {
	var errs []error
	bad := func(field string, got any, want string) {
		errs = append(errs, fmt.Errorf("%w: %s = %v: want %s", ErrInvalidConfig, field, got, want))
	}
	if c.PeriodNs <= 0 {
		bad("period", c.PeriodNs, "a positive duration (ns)")
	}
	if !(c.CongestionThreshold > 0 && c.CongestionThreshold < 1) {
		bad("congestion_threshold", c.CongestionThreshold, "a fraction in (0, 1), e.g. 0.1")
	}
	if !(c.Sensitivity > 0 && c.Sensitivity <= 10) || math.IsNaN(c.Sensitivity) {
		bad("sensitivity", c.Sensitivity, "a number in (0, 10], e.g. 0.5")
	}
	if c.MinChannels < 1 {
		bad("min_channels", c.MinChannels, ">= 1")
	}
	if c.MaxChannels < 0 {
		bad("max_channels", c.MaxChannels, ">= 0 (0: no cap)")
	}
	if c.Cores < 0 {
		bad("cores", c.Cores, ">= 0 (0: unknown)")
	}
	if c.InitialChannels < 0 {
		bad("initial_channels", c.InitialChannels, ">= 0 (0: min_channels)")
	}
	if c.ScaleDownPeriods < 1 {
		bad("scale_down_periods", c.ScaleDownPeriods, ">= 1")
	}
	if c.WarmUpPeriods < 0 {
		bad("warmup_periods", c.WarmUpPeriods, ">= 0")
	}
	if c.DrainPeriods < 1 {
		bad("drain_periods", c.DrainPeriods, ">= 1")
	}
	limit := c.Limit()
	switch {
	case c.MaxChannels <= 0 && c.Cores <= 0:
		bad("max_channels", c.MaxChannels, "a channel limit: max_channels or cores must be set")
	case c.MinChannels >= 1 && c.MinChannels > limit:
		bad("min_channels", c.MinChannels, fmt.Sprintf("<= the channel limit %d (max_channels, cores)", limit))
	case c.MinChannels >= 1:
		m := c.Map()
		if lo, hi := m.Level(c.MinChannels), m.MaxLevel(limit); lo > hi {
			bad("min_channels", c.MinChannels, fmt.Sprintf(
				"a level map entry <= the limit %d: levels jump from %d to %d channels",
				limit, m.Channels(hi), m.Channels(lo)))
		}
		if init := c.initial(); c.InitialChannels > 0 && (init < c.MinChannels || init > limit) {
			bad("initial_channels", c.InitialChannels, fmt.Sprintf("in [min_channels %d, limit %d]", c.MinChannels, limit))
		}
	}
	return errors.Join(errs...)
}
