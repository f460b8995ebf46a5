#!/usr/bin/env bash
# crashloop.sh JOB.yaml OUTPUT [rounds=20] [kills=3] — soak test of
# checkpoints and exactly-once output. JOB must have a checkpoint: section;
# OUTPUT is the file its sink writes (as the job resolves it). Runs the job
# once uncrashed, then `rounds` times: start, SIGKILL after a random delay
# (kills times), restart with --restore latest (afresh when no checkpoint
# exists yet), let the last run finish, and compare the output with the
# uncrashed run's byte for byte. Prints the seed of each round (bash
# $RANDOM, seeded with SEED=…) so a failure can be replayed.
set -euo pipefail
job="${1:?usage: crashloop.sh JOB.yaml OUTPUT [rounds] [kills]}"
out="${2:?usage: crashloop.sh JOB.yaml OUTPUT [rounds] [kills]}"
rounds="${3:-20}"
kills="${4:-3}"
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${STREAMD_BIN:-$root/bin/streamd}"
[ -x "$bin" ] || (cd "$root" && go build -o "$bin" ./cmd/streamd)
ckdir="$(grep -A3 '^checkpoint:' "$job" | sed -nE 's/.*dir: *([^,}]+).*/\1/p' | head -1 | xargs)"
case "$ckdir" in /*) ;; *) ckdir="$(dirname "$job")/$ckdir" ;; esac
RANDOM="${SEED:-$$}"
rm -rf "$ckdir" "$out" "$out.parts"
"$bin" run "$job" --quiet
cp "$out" "$out.reference"
for round in $(seq "$rounds"); do
  seed=$RANDOM
  RANDOM=$seed
  rm -rf "$ckdir" "$out" "$out.parts"
  for k in $(seq "$kills"); do
    args=(run "$job" --quiet)
    ls -d "$ckdir"/chk-* >/dev/null 2>&1 && args+=(--restore latest)
    "$bin" "${args[@]}" & pid=$!
    sleep "0.$((RANDOM % 9 + 1))"
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  args=(run "$job" --quiet)
  ls -d "$ckdir"/chk-* >/dev/null 2>&1 && args+=(--restore latest)
  "$bin" "${args[@]}"
  if cmp -s "$out" "$out.reference"; then
    echo "round $round (seed $seed): identical"
  else
    echo "round $round (seed $seed): OUTPUT DIFFERS" >&2
    exit 1
  fi
done
