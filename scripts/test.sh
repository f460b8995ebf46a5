#!/usr/bin/env bash
# scripts/test.sh — the fast test tier: the README's test command, what CI
# runs (.ci/run). Budget: STREAMD_TEST_BUDGET (default 8m, a Go duration);
# about 4½ minutes on a quiet 2-core machine (README, "Tests"). The long tier,
# with full grids, long crash loops, fuzzing and soak runs, is
# scripts/test-long.sh.
#
# It runs go vet, then every package but core/jobfile under the race
# detector, then core/jobfile and the end-to-end tests on the real data
# (the flights job against sqlite3 on the full 3 M rows at 4 channel
# counts; the flights and a generator job under random live channel
# changes and under kill -9 and restore, on a slice of the flights)
# without it, where the race detector would only slow them ~5x: the same
# runtime paths run under -race in core's own tests. Tests size
# themselves for this tier (internal/tier: STREAMD_LONG unset); fuzz
# targets run their seed corpora only. Each test binary runs under
# -timeout $timeout, so a hang fails with a goroutine dump instead of
# eating CI's time.
#
# It prints go test's package lines and the output of failed tests, then
# the ten slowest tests and the time against the budget, and exits
# non-zero if vet or a test failed or the run went over the budget.
# STREAMD_TEST_JSON=DIR keeps the go test -json files there.
#
# Needs ../shared/data beside the repository (or STREAMD_DATA, an absolute
# path) and sqlite3.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$root"

budget="${STREAMD_TEST_BUDGET:-8m}" # the one place the budget is set
timeout=5m                          # per test binary
e2e='TestFlightsJobMatchesSQLite|TestRescaledJobsMatchStatic|TestKillRestoreExactlyOnce'
# The packages with the longest tests under -race, longest first: go test
# starts packages in the order named (2 at a time on 2 cores), so these
# start at once instead of after the packages that sort before them, and
# the short ones fill in beside them (./... names each package once).
first=(./core/runtime ./core/source ./cmd/streamd)
# core/jobfile runs without -race here: its tests build jobs from job files
# and compare whole runs' outputs (the runtime paths they drive run under
# -race in core/runtime's own tests), and under the race detector they
# were a quarter of the tier's CPU. The long tier runs it under -race.
norace=streamd/core/jobfile

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
json="${STREAMD_TEST_JSON:-$work}"
mkdir -p "$json"
rm -f "$json/race.json" "$json/e2e.json"
go_build "$work/testsum" "$root" ./scripts/internal/testsum || exit 1

unset STREAMD_LONG
status=0
go vet ./... || status=1
mapfile -t race < <(go list ./... | grep -vx "$norace")
go test -race -count=1 -timeout "$timeout" -skip "$e2e" -json "${first[@]}" "${race[@]}" 2>&1 |
  "$work/testsum" stream -o "$json/race.json" || status=1
# core/jobfile and the end-to-end tests side by side (the e2e tests leave
# a core idle much of the time); their lines are printed after both end.
go test -count=1 -timeout "$timeout" -json "$norace" >"$work/norace.out" 2>&1 &
p1=$!
go test -count=1 -timeout "$timeout" -run "$e2e" -json ./cmd/streamd >"$work/e2e.out" 2>&1 &
p2=$!
wait "$p1" || status=1
wait "$p2" || status=1
cat "$work/norace.out" "$work/e2e.out" | "$work/testsum" stream -o "$json/e2e.json" || status=1
"$work/testsum" report -top 10 -budget "$budget" -elapsed "${SECONDS}s" "$json/race.json" "$json/e2e.json" || status=1
if [ "$status" -ne 0 ]; then
  echo "scripts/test.sh: FAIL"
else
  echo "scripts/test.sh: ok"
fi
exit "$status"
