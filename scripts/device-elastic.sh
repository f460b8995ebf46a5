#!/usr/bin/env bash
# device-elastic.sh DIR — the elastic demonstration on a many-core machine
# from a prebuilt static binary (DIR/bin/streamd): examples/elastic/job.yaml
# (rate 1 M → 6 M → 1 M records/s) under the level controller and under
# DS2, with their timelines. (The flights job against sqlite3 and DuckDB:
# scripts/flights-peers.sh, run by scripts/device-open.sh.)
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
