#!/usr/bin/env bash
# Nexmark q5 (hot auctions, 2 channels) with the loads counted only and
# with rebalancing auto, alternating A B A B from one test binary
# (perf/nexmark BenchmarkQ5Rebalance; docs/PERFORMANCE.md, "Rebalancing").
#   scripts/bench-rebalance-q5.sh [ROUNDS] [EVENTS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
events=${2:-4000000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/nexmark.test" ./perf/nexmark
echo "date: $(date -u +%F\ %T) UTC; machine: $(nproc) vCPU,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-); load: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
  for mode in count auto; do
    "$tmp/nexmark.test" -test.run '^$' -test.bench "Q5Rebalance/$mode\$" -test.benchtime "${events}x" | grep Q5Rebalance | sed "s/^/round $r: /; s/\$/ load $(cut -d' ' -f1 /proc/loadavg)/"
  done
done
