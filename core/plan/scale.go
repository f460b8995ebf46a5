package plan

import (
	"time"

	"streamd/elastic"
	"streamd/kvstate/balance"
)

// Elastic configures the controller that changes a region's channel count
// while the job runs (Gedik et al., IEEE TPDS 25(6), 2014; DS2, OSDI 2018).
type Elastic struct {
	// Policy is "levels" (the TPDS 2014 level controller), "ds2" or "off".
	Policy string
	Config elastic.Config
	// DryRun logs every decision without carrying it out.
	DryRun bool
	// Now, if set, is the clock periods are measured by (tests: a period
	// per call makes every source batch a period boundary).
	Now func() time.Time
}

// Rebalance configures load balancing of a keyed region at the same
// channel count.
type Rebalance struct {
	// Auto plans a rebalance every Period when the skew (max channel
	// load / mean, records in the period) exceeds TargetSkew.
	Auto bool
	// TargetSkew is the skew a plan aims at (≤ 1: balance.DefaultTarget).
	TargetSkew float64
	// Period is how often the loads are read (default 1 s, wall time or
	// Now's).
	Period time.Duration
	// MaxPause bounds the modelled pause of one step (default 1 ms;
	// balance.Cost).
	MaxPause time.Duration
	// Cost is the pause model (zero: balance.DefaultCost).
	Cost balance.Cost
	// RandomEvery, if > 0 (tests, demonstrations), makes a step every that
	// many source batches that moves 1 to 8 random key groups to random
	// other channels (seeded by Seed), whatever the load.
	RandomEvery int
	Seed        uint64
	// Now, if set, is the clock Period is measured by (tests).
	Now func() time.Time
}
