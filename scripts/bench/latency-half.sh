#!/usr/bin/env bash
# scripts/bench.sh latency-half [rounds=3] [workload=pipeline] — the latency goal
# (end-to-end p99 < 500 µs at half the maximum rate), measured the way the
# goal reads, in one script: each round runs WORKLOAD closed loop for 3 s
# to find the maximum rate on this machine now, then open loop at half of
# it for 4 s (latency from each record's intended send time: no
# coordinated omission), and prints both reports' lines.
# Environment: STREAMD_BIN (default: build into a temporary directory),
# BENCH_FLAGS (extra flags for both runs, e.g. --unpinned).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
rounds="${1:-3}"
workload="${2:-pipeline}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
bin="$(streamd_bin "$work/streamd")"
# shellcheck disable=SC2086
for i in $(seq "$rounds"); do
  "$bin" bench "$workload" --duration 3s --out "$work/max" ${BENCH_FLAGS:-} >"$work/max.txt" 2>&1
  max=$(awk '/^records\/s  /{ v = $2; u = $3; if (u == "M") v *= 1e6; else if (u == "K" || u == "k") v *= 1e3; print v }' "$work/max.txt")
  half=$(awk -v m="$max" 'BEGIN { printf "%d", m / 2 }')
  "$bin" bench "$workload" --duration 4s --rate "$half" --out "$work/half" ${BENCH_FLAGS:-} >"$work/half.txt" 2>&1
  [ "$i" = 1 ] && grep '^machine' "$work/max.txt"
  echo "round $i: maximum $(awk '/^records\/s  /{print $2, $3}' "$work/max.txt") records/s; $(grep '^latency' "$work/max.txt")"
  echo "round $i: open loop at $half records/s; $(grep '^latency' "$work/half.txt")"
done
