#!/usr/bin/env bash
# device-elastic.sh DIR — the elastic demonstration on a many-core machine
# from a prebuilt static binary (DIR/bin/streamd): examples/elastic/job.yaml
# (rate 1 M → 6 M → 1 M records/s) under the level controller and under
# DS2, with their timelines; then scripts/bench-flights.sh if DIR/sqlite
# holds a sqlite3 binary (and its libraries).
set -u
dir=$(cd "${1:?usage: device-elastic.sh DIR}" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$(mktemp -d)}
export STREAMD_BIN=$dir/bin/streamd STREAMD_DATA=$dir/data STREAMD_OUT=$(mktemp -d)
export STREAMD_RATE1=${STREAMD_RATE1:-1000000} STREAMD_RATE2=${STREAMD_RATE2:-6000000}
export STREAMD_COUNT=${STREAMD_COUNT:-110000000} STREAMD_MAX_CHANNELS=${STREAMD_MAX_CHANNELS:-12}
echo "== $(date -u '+%Y-%m-%d %H:%M UTC') $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs"
for policy in levels ds2; do
  echo "== elastic: policy $policy, rate $STREAMD_RATE1 → $STREAMD_RATE2 (10 s–25 s) → $STREAMD_RATE1"
  STREAMD_POLICY=$policy timeout 120 "$STREAMD_BIN" run "$root/examples/elastic/job.yaml" \
    --elastic-log "$out/timeline-$policy.csv" 2>&1 | grep -v 'msg=elastic' | tail -22
  cat "$out/timeline-$policy.csv"
done
if [ -x "$dir/sqlite/sqlite3" ]; then
  mkdir -p "$dir/path"
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$dir/sqlite" "$dir/sqlite/sqlite3" >"$dir/path/sqlite3"
  chmod +x "$dir/path/sqlite3"
  echo "== flights vs sqlite3"
  PATH="$dir/path:$PATH" timeout 150 "$root/scripts/bench-flights.sh" 3 2
  PATH="$dir/path:$PATH" timeout 100 "$root/scripts/bench-flights.sh" 3 1 | tail -2
fi
