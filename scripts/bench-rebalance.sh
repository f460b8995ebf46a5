#!/usr/bin/env bash
# Rebalancing on the quick-start Zipf job (docs/PERFORMANCE.md,
# "Rebalancing"): the job with region.rebalance off and auto, alternating
# A B A B in one script, COUNT records (default 8 M); prints records/s,
# records per channel and the rebalance line, and checks that both give
# the same output bytes. A third setting, "count", runs the counters
# without ever rebalancing (target_skew: 100): the cost of measuring.
# With OLDREV set (a git commit), a fourth, "auto-old", runs auto with the
# binary built from that commit, alternating with this tree's.
#   [OLDREV=c630fcb] scripts/bench-rebalance.sh [ROUNDS] [COUNT]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
count=${2:-8000000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/streamd" ./cmd/streamd
modes="off count auto"
if [ -n "${OLDREV:-}" ]; then
  mkdir -p "$tmp/oldsrc"
  git archive "$OLDREV" | tar -x -C "$tmp/oldsrc"
  (cd "$tmp/oldsrc" && go build -o "$tmp/streamd-old" ./cmd/streamd)
  modes="off count auto auto-old"
fi
echo "date: $(date -u +%F\ %T) UTC; machine: $(nproc) vCPU,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-); load: $(cut -d' ' -f1-3 /proc/loadavg)"
for mode in $modes; do
  mkdir -p "$tmp/$mode"
  spec="{mode: ${mode%-old}, period: 200ms}"
  [ "$mode" = count ] && spec="{mode: auto, period: 200ms, target_skew: 100}"
  sed -e "s|  key_by: \[key\]|  key_by: [key]\n  rebalance: $spec|" \
      -e "s|count: 2000000|count: $count|" \
      -e "s|\${STREAMD_OUT:-out}|$tmp/$mode|" examples/quickstart/job.yaml > "$tmp/$mode.yaml"
done
for r in $(seq "$rounds"); do
  for mode in $modes; do
    bin="$tmp/streamd"
    [ "$mode" = auto-old ] && bin="$tmp/streamd-old"
    out=$("$bin" run "$tmp/$mode.yaml" 2>&1)
    echo "round $r, rebalance $mode: $(grep -o '([0-9]* records/s)' <<<"$out") load $(cut -d' ' -f1 /proc/loadavg)"
    grep -E '^ +[0-9]+ +records' <<<"$out" | awk '{print "  channel " $1 ": " $3 " records"}'
    grep -A2 '^rebalance:' <<<"$out" | sed 's/^/  /' || true
  done
  for m in $modes; do cmp "$tmp/off/quickstart.csv" "$tmp/$m/quickstart.csv"; done && echo "  output identical ($(wc -c <"$tmp/off/quickstart.csv") bytes)"
done
