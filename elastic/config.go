package elastic

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrInvalidConfig is wrapped by every error [Config.Validate] returns.
var ErrInvalidConfig = errors.New("elastic: invalid config")

// MinPeriodNs is the shortest adaptation period a [Config] may have: 10 ms,
// in ns. The runtime steps the policy after a source batch once a period has
// passed, and a change of the channel count pauses the region for 0.1–30 ms
// (docs/PERFORMANCE-LOG.md, "Elastic scaling"); periods much shorter than
// that measure the pauses and the batching, not the load, and step the
// policy after nearly every batch.
const MinPeriodNs int64 = 10e6

// Config holds the parameters of every policy. Start from [DefaultConfig]
// and override; the field names in error messages are the job file's
// (snake_case) keys under region.elastic (docs/JOB.md), except cores and
// initial_channels, which the caller sets.
type Config struct {
	// PeriodNs is the adaptation period, in ns (period; default 1 s, at
	// least [MinPeriodNs]). The
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
	// region's channels (0 means unknown: MaxChannels alone caps). It is not
	// a job-file key: the caller sets it (the job file leaves it 0 and
	// defaults max_channels from the machine's CPUs instead).
	// The limit is min(MaxChannels, Cores) over the non-zero ones; at least
	// one must be set.
	Cores int
	// InitialChannels is the channel count the region starts with (0, the
	// default, means MinChannels). It is not a job-file key: the job file
	// sets it from region.channels. The level controller starts at the
	// smallest level with N(L) >= InitialChannels.
	InitialChannels int
	// ScaleDownPeriods is the scale-down delay (scale_down_periods; default
	// 30, at least 1): a policy lowers the channel count only after that
	// many consecutive periods without congestion at the current count, and
	// sizes the lower count for the highest load of those periods (the
	// largest throughput for the level controller, the largest count asked
	// for by [DS2]). Increases do not wait. The default outlasts load cycles
	// of up to 30 periods, so that a region keeps what their peaks need;
	// docs/JOB.md gives the reasons for 30 and not the hour of Flink's
	// autoscaler.
	ScaleDownPeriods int
	// WarmUpPeriods is how many periods after a change of the channel count
	// both policies ignore (warmup_periods; default 1, may be 0): the
	// backlog built up during the pause drains in them, so they mix the
	// reconfiguration with steady processing. The runtime already discards
	// the period in which a change takes effect.
	WarmUpPeriods int
	// DrainPeriods is how many periods a backlog may take to drain
	// (drain_periods; default 30, at least 1): [DS2]'s target rate is the
	// offered load plus Backlog / (DrainPeriods × period length), and the
	// level controller does not climb while a falling backlog will be gone
	// within it. The default is the scale-down delay: channels added only to
	// drain faster than that would be released no sooner, a pair of changes
	// for a backlog the region clears anyway.
	DrainPeriods int
	// WindowPeriods is how many periods a decision is taken from
	// (window_periods; default 3, at least 1): the policies reduce the last
	// WindowPeriods periods at the current channel count (after the
	// warm-up) with Statistic and decide nothing until that many are in.
	// 1 decides from every period alone, as both papers do.
	WindowPeriods int
	// Statistic reduces the window (window_statistic; default median; also
	// mean, min, max).
	Statistic Statistic
	// CoolDownPeriods is the least number of periods a policy sees at a
	// channel count after changing it before it changes it again
	// (cooldown_periods; default 3, at least 1, warm-up included). Every
	// change pauses the region (docs/PERFORMANCE-LOG.md, "Elastic
	// scaling": p99 up to ~30 ms on 2 vCPUs) and the runtime discards the
	// period it takes effect in, so with 3 changes come at most every 4
	// periods and pauses stay below 1 % of the time even when changes
	// follow each other; the window needs 2 of them to see a majority
	// anyway.
	CoolDownPeriods int
	// MinGain is the gain rule (min_gain; default 0.1, in (0, 1]): adding
	// channels pays when the throughput rises by at least MinGain times the
	// channels added times the measured per-channel throughput at the lower
	// count. The level controller's P1 and P5 and [DS2]'s check after a
	// change use it; a sub-linear region keeps growing while each added
	// channel brings at least that fraction of what a channel delivers now.
	// [TPDS14] uses the sensitivity α (0.5) here, which takes scaling of
	// less than half the ideal for a bottleneck outside the region.
	MinGain float64
	// MemoryPeriods is how long an observation stays recent
	// (memory_periods; default 60, at least 1): the level controller's P5
	// compares only with a congested observation at the level below made
	// within that many periods, and a level's best throughput older than
	// that is replaced by the next measurement rather than kept as the best.
	MemoryPeriods int
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
		ScaleDownPeriods:    30,
		WarmUpPeriods:       1,
		DrainPeriods:        30,
		WindowPeriods:       3,
		Statistic:           StatMedian,
		CoolDownPeriods:     3,
		MinGain:             0.1,
		MemoryPeriods:       60,
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
	if c.PeriodNs < MinPeriodNs {
		bad("period", time.Duration(c.PeriodNs), "at least "+time.Duration(MinPeriodNs).String())
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
	if c.WindowPeriods < 1 {
		bad("window_periods", c.WindowPeriods, ">= 1")
	}
	if !c.Statistic.valid() {
		bad("window_statistic", fmt.Sprintf("%q", c.Statistic), "median, mean, min or max")
	}
	if c.CoolDownPeriods < 1 {
		bad("cooldown_periods", c.CoolDownPeriods, ">= 1")
	}
	if !(c.MinGain > 0 && c.MinGain <= 1) {
		bad("min_gain", c.MinGain, "a fraction in (0, 1], e.g. 0.1")
	}
	if c.MemoryPeriods < 1 {
		bad("memory_periods", c.MemoryPeriods, ">= 1")
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
