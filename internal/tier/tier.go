// Package tier tells a test which test tier runs it, so that one test can
// be a quick check in the fast tier and a thorough one in the long tier.
//
// The fast tier is the default: plain `go test` and scripts/test.sh (what
// CI runs) get small inputs, a few seeds and a few kills, so that the whole
// suite stays inside its budget (README, "Tests"). The long tier is
// scripts/test-long.sh, which sets STREAMD_LONG=1: full grids on the 3 M
// flights, every seed, long crash loops.
//
// A test sizes itself with Pick (seeds, rows, kills); a check that only
// makes sense at full size calls SkipUnlessLong. Nothing here reads a
// clock: timing belongs in benchmarks and scripts, not in assertions.
package tier

import (
	"os"
	"testing"
)

// Env is the environment variable that selects the long tier: set to
// anything but "" or "0".
const Env = "STREAMD_LONG"

// Long reports whether the long tier runs (Env is set).
func Long() bool {
	v := os.Getenv(Env)
	return v != "" && v != "0"
}

// Pick returns fast in the fast tier and long in the long tier.
func Pick[T any](fast, long T) T {
	if Long() {
		return long
	}
	return fast
}

// SkipUnlessLong skips tb outside the long tier, saying how to run it.
func SkipUnlessLong(tb testing.TB) {
	tb.Helper()
	if !Long() {
		tb.Skipf("long tier only: %s=1 (scripts/test-long.sh)", Env)
	}
}
