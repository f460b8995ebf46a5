//go:build !linux

package source

import (
	"runtime"
	"time"
)

// nap waits about d (at most a few hundred µs) by yielding until due:
// without a raw thread sleep, a Go timer this short would oversleep to a
// whole millisecond.
func nap(d time.Duration) {
	until := time.Now().Add(d)
	for time.Now().Before(until) {
		runtime.Gosched()
	}
}
