#!/usr/bin/env bash
# scripts/bench.sh checkpoint [records=10000000] [interval=1s] [pairs=2] — the cost
# of checkpoints, side by side in one run: a generator job over 1 M keys
# (1-minute windows) with checkpoints every INTERVAL versus without, PAIRS
# alternating pairs of runs; prints each report's throughput, checkpoint
# duration p50/p99, the barrier pause p99 and the copy-on-write stalls, then
# the ratios of the best and of the median runs, and of the CPU time used.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
n="${1:-10000000}"
interval="${2:-1s}"
pairs="${3:-2}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
bin="$(streamd_bin "$work/streamd")"
job() {
  keyed1m_job ckpt-cost "$n" "$work/out-$1.csv"
  echo "$2"
}
job off "" >"$work/off.yaml"
job on "checkpoint: {dir: $work/ck, interval: $interval, retain: 2}" >"$work/on.yaml"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs; $n records, 1 M keys"
for k in $(for _ in $(seq "$pairs"); do echo off on; done); do
  cpu=$( { TIMEFORMAT='%U %S'; time "$bin" run "$work/$k.yaml" 2>"$work/$k.log" >/dev/null; } 2>&1 | awk '{ print $1 + $2 }')
  rate=$(sed -nE 's/.*\(([0-9]+) records\/s\).*/\1/p' "$work/$k.log")
  echo "checkpoints $k: $rate records/s, CPU $cpu s $(grep -h '^checkpoints:' "$work/$k.log" || true)"
  echo "$rate" >>"$work/rate-$k"
  echo "$cpu" >>"$work/cpu-$k"
done
awk -v on="$(sort -n "$work/rate-on" | tail -1)" -v off="$(sort -n "$work/rate-off" | tail -1)" \
  'BEGIN { printf "best with / best without: %.3f (loss %.1f %%)\n", on / off, (1 - on / off) * 100 }'
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
awk -v on="$(median "$work/rate-on")" -v off="$(median "$work/rate-off")" \
  'BEGIN { printf "median with / median without: %.3f (loss %.1f %%)\n", on / off, (1 - on / off) * 100 }'
# CPU time (user + system) is steadier than throughput on a shared VM: the
# extra CPU that checkpoints cost, as a share of the job's CPU without them.
awk -v on="$(median "$work/cpu-on")" -v off="$(median "$work/cpu-off")" \
  'BEGIN { printf "CPU time, median with / median without: %.3f (checkpoints cost %.1f %% more CPU)\n", on / off, (on / off - 1) * 100 }'
