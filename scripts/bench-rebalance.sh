#!/usr/bin/env bash
# Rebalancing on the quick-start Zipf job (docs/PERFORMANCE.md,
# "Rebalancing"): the job with region.rebalance off and auto, alternating
# A B A B in one script, COUNT records (default 8 M); prints records/s,
# records per channel and the rebalance line, and checks that both give
# the same output bytes. A third setting, "count", runs the counters
# without ever rebalancing (target_skew: 100): the cost of measuring.
#   scripts/bench-rebalance.sh [ROUNDS] [COUNT]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
count=${2:-8000000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/streamd" ./cmd/streamd
for mode in off count auto; do
  mkdir -p "$tmp/$mode"
  spec="{mode: $mode, period: 200ms}"
  [ "$mode" = count ] && spec="{mode: auto, period: 200ms, target_skew: 100}"
  sed -e "s|  key_by: \[key\]|  key_by: [key]\n  rebalance: $spec|" \
      -e "s|count: 2000000|count: $count|" \
      -e "s|\${STREAMD_OUT:-out}|$tmp/$mode|" examples/quickstart/job.yaml > "$tmp/$mode.yaml"
done
for r in $(seq "$rounds"); do
  for mode in off count auto; do
    out=$("$tmp/streamd" run "$tmp/$mode.yaml" 2>&1)
    echo "round $r, rebalance $mode: $(grep -o '([0-9]* records/s)' <<<"$out")"
    grep -E '^ +[0-9]+ +records' <<<"$out" | awk '{print "  channel " $1 ": " $3 " records"}'
    grep -A2 '^rebalance:' <<<"$out" | sed 's/^/  /' || true
  done
  cmp "$tmp/off/quickstart.csv" "$tmp/auto/quickstart.csv" && echo "  output identical ($(wc -c <"$tmp/off/quickstart.csv") bytes)"
done
