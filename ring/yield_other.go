//go:build !linux

package ring

import "runtime"

// osYield yields the processor. Off Linux, runtime.Gosched stands in for
// sched_yield(2).
func osYield() { runtime.Gosched() }
