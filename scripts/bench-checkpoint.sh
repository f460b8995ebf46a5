#!/usr/bin/env bash
# bench-checkpoint.sh [records=10000000] [interval=1s] — the cost of
# checkpoints, side by side in one run: a generator job over 1 M keys
# (1-minute windows) with checkpoints every INTERVAL versus without;
# prints both reports' throughput, the ratio, checkpoint duration p50/p99
# and the data-path pause p99 (the snapshot copy).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
n="${1:-10000000}"
interval="${2:-1s}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
bin="${STREAMD_BIN:-$work/streamd}"
[ -x "$bin" ] || (cd "$root" && go build -o "$bin" ./cmd/streamd)
job() {
  cat <<YAML
name: ckpt-cost
source:
  generator: {seed: 9, count: $n, keys: 1000000, distribution: uniform, step: 10us}
event_time: {field: ts}
region:
  channels: 2
  key_by: [key]
  ops:
    - window:
        size: 1m
        aggregates: {n: count, total: sum(value), top: max(value)}
sink:
  csv: {path: $work/out-$1.csv}
$2
YAML
}
job off "" >"$work/off.yaml"
job on "checkpoint: {dir: $work/ck, interval: $interval, retain: 2}" >"$work/on.yaml"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs; $n records, 1 M keys"
for k in off on off on; do
  "$bin" run "$work/$k.yaml" 2>"$work/$k.log" >/dev/null
  rate=$(sed -nE 's/.*\(([0-9]+) records\/s\).*/\1/p' "$work/$k.log")
  echo "checkpoints $k: $rate records/s $(grep -h '^checkpoints:' "$work/$k.log" || true)"
  echo "$rate" >>"$work/rate-$k"
done
awk -v on="$(sort -n "$work/rate-on" | tail -1)" -v off="$(sort -n "$work/rate-off" | tail -1)" \
  'BEGIN { printf "best with / best without: %.3f (loss %.1f %%)\n", on / off, (1 - on / off) * 100 }'
