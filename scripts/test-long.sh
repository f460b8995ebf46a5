#!/usr/bin/env bash
# scripts/test-long.sh [STEP…] — the long test tier: every check too long
# for the fast tier (scripts/test.sh, CI's 10-minute budget). Hours with
# the defaults; run it before a release, after a change to the runtime,
# checkpoints or restore, and say in the change's note which tier ran.
#
# Steps (default: all, in this order):
#   tests  go vet, every package under -race, then the end-to-end tests,
#          with STREAMD_LONG=1 (internal/tier): the full seed grids, the
#          metamorphic and kill -9 tests on the 3 M flights rows, and
#          whatever long forms later tests add (larger grids, DST calendars,
#          broker round trips) through tier.Pick and tier.SkipUnlessLong
#   crash  scripts/crashloop.sh on the flights job and a 1 M-key generator
#          job with random live channel changes, both checkpointed every
#          50 ms, 3 kills a round, until STREAMD_CRASHES kills in all
#          (default 10000); each round's output must equal an uncrashed run's
#   fuzz   scripts/fuzz.sh: every fuzz target for STREAMD_FUZZTIME each
#          (default 5m)
#   soak   TestSoak for STREAMD_SOAK (default 30m): rescaled, checkpointed
#          jobs round after round in one process, identical output, no
#          goroutine or heap growth
#
# A new long check is a Go test sized with internal/tier (it runs in the
# tests step, and in its fast form in scripts/test.sh) or, when it is not a
# Go test (a broker round trip, a benchmark-like soak), a step here.
#
# Each test binary runs under -timeout $timeout. Needs what scripts/test.sh
# needs (../shared/data or STREAMD_DATA, sqlite3). Exits non-zero if any
# step failed; the others still run.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$root"

timeout=90m # per test binary
e2e='TestFlightsJobMatchesSQLite|TestRescaledJobsMatchStatic|TestKillRestoreExactlyOnce'
crashes="${STREAMD_CRASHES:-10000}"
fuzztime="${STREAMD_FUZZTIME:-5m}"
soak="${STREAMD_SOAK:-30m}"
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(tests crash fuzz soak)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
go_build "$work/testsum" "$root" ./scripts/internal/testsum || exit 1
export STREAMD_LONG=1
status=0
failed=()
fail() {
  status=1
  failed+=("$1")
}

tests() {
  local s=0
  go vet ./... || s=1
  go test -race -count=1 -timeout "$timeout" -skip "$e2e" -json ./... 2>&1 |
    "$work/testsum" stream -o "$work/race.json" || s=1
  go test -count=1 -timeout "$timeout" -run "$e2e" -json ./cmd/streamd 2>&1 |
    "$work/testsum" stream -o "$work/e2e.json" || s=1
  "$work/testsum" report -top 10 "$work/race.json" "$work/e2e.json" || s=1
  return "$s"
}

crash() {
  local data="${STREAMD_DATA:-$root/../shared/data}"
  data="$(cd "$data" && pwd)" || return 1
  export STREAMD_DATA="$data"
  export STREAMD_BIN="$work/streamd"
  build_streamd "$STREAMD_BIN" || return 1
  mkdir -p "$work/flights" "$work/gen"
  { cat examples/flights/job.yaml; echo "checkpoint: {dir: ck, interval: 50ms, retain: 2}"; } >"$work/flights/job.yaml"
  cat >"$work/gen/job.yaml" <<'YAML'
name: gen1m
source:
  generator: {seed: 5, count: 600000, keys: 1000000, distribution: uniform, step: 1ms}
event_time: {field: ts}
region:
  channels: 2
  key_by: [key]
  elastic: {random_every: 3, seed: 7, max_channels: 6}
  ops:
    - window:
        size: 2m
        aggregates: {n: count, total: sum(value), top: max(value)}
checkpoint: {dir: ck, interval: 50ms, retain: 2}
sink:
  csv: {path: out/out.csv}
YAML
  local kills=3
  local rounds=$(((crashes + 2 * kills - 1) / (2 * kills))) # per job
  echo "crash loops: $rounds rounds of $kills kills on each of 2 jobs"
  STREAMD_OUT="$work/flights/out" scripts/crashloop.sh "$work/flights/job.yaml" "$work/flights/out/flights-hourly.csv" "$rounds" "$kills" || return 1
  scripts/crashloop.sh "$work/gen/job.yaml" "$work/gen/out/out.csv" "$rounds" "$kills" || return 1
}

fuzz() {
  scripts/fuzz.sh "$fuzztime"
}

soak() {
  STREAMD_SOAK="$soak" go test -count=1 -timeout "$timeout" -run '^TestSoak$' -v ./cmd/streamd 2>&1 | grep -v '^=== '
}

for step in "${steps[@]}"; do
  case "$step" in
  tests | crash | fuzz | soak) ;;
  *)
    echo "scripts/test-long.sh: unknown step $step (tests, crash, fuzz, soak)" >&2
    exit 2
    ;;
  esac
  echo "== $step"
  start=$SECONDS
  if "$step"; then
    echo "== $step: ok ($((SECONDS - start)) s)"
  else
    echo "== $step: FAIL ($((SECONDS - start)) s)"
    fail "$step"
  fi
done
if [ "$status" -ne 0 ]; then
  echo "scripts/test-long.sh: FAIL (${failed[*]})"
else
  echo "scripts/test-long.sh: ok (${steps[*]}, ${SECONDS} s)"
fi
exit "$status"
