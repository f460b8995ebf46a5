package runtime

import "streamd/core/plan"

// PositionText is plan.PositionText.
//
// Deprecated: use plan.PositionText.
func PositionText(sources map[string]int64) string { return plan.PositionText(sources) }
