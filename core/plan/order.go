package plan

import "streamd/core"

// RegionOrderKept says whether the merger can interleave the channels'
// records of one firing by the region's order (the runtime's regionTie):
// false when an operator with an order (a window) is followed in the region
// by one that does not keep its order fields unchanged (a map replacing the
// key, a project dropping the window's end, a running aggregate), whose
// output then depends on the channel count; at is that operator's index in
// ops.
func RegionOrderKept(ops []core.OperatorDef) (ok bool, at int) {
	last := OrderedOp(ops)
	if last < 0 || last == len(ops)-1 {
		return true, -1
	}
	by := ops[last].OrderBy
	for k := last + 1; k < len(ops); k++ {
		var kept bool
		if by, kept = core.CarryOrder(by, ops[k:k+1]); !kept {
			return false, k
		}
	}
	return true, -1
}

// OrderedOp is the index of the last of ops that has an order
// (OperatorDef.Order: a window), -1 when none has.
func OrderedOp(ops []core.OperatorDef) int {
	last := len(ops) - 1
	for last >= 0 && ops[last].Order == nil {
		last--
	}
	return last
}
