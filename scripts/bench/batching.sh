#!/usr/bin/env bash
# scripts/bench.sh batching [seconds=10] [pairs=2] [full=3000000] — adaptive batching at
# the splitter (runtime.batch_linger, docs/ARCHITECTURE.md "Adaptive batching"),
# off (A) against the default 1 ms (B), alternating A B A B, with this tree's
# binary. Job: a generator (10,000 keys) into a one-channel keyed region with a
# 1-minute window (count, sum), the elastic level controller watching with
# max_channels 1 (so it never scales, but logs the congestion index each 1 s
# period). Low rate: 100,000 records/s for SECONDS; prints per run the splitter's
# blocked time over the wall time (the congestion index of the whole run) and
# the mean and max of the per-period indexes. Full rate: FULL records from a
# generator whose rate is far above what the job reaches (which keeps the
# single source stage); prints records/s. Outputs are compared byte for byte.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
secs="${1:-10}"
pairs="${2:-2}"
full="${3:-3000000}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
build_streamd "$work/streamd"
job() { # name count rate linger
  cat <<YAML
name: batching-$1
source:
  generator: {seed: 3, count: $2, keys: 10000, step: 1ms, rate: $3}
event_time: {field: ts}
region:
  channels: 1
  key_by: [key]
  elastic: {policy: levels, period: 1s, max_channels: 1}
  ops:
    - window:
        size: 1m
        aggregates: {n: count, total: sum(value)}
sink:
  csv: {path: $work/out-$1.csv}
runtime: {batch_linger: $4}
YAML
}
secs_of() { # "1.234s" or "567ms" or "0s" → seconds
  awk -v v="$1" 'BEGIN { if (v ~ /ms$/) { sub(/ms$/, "", v); print v/1000 } else if (v ~ /µs$/) { sub(/µs$/, "", v); print v/1e6 } else { sub(/s$/, "", v); print v+0 } }'
}
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%F)"
for phase in low full; do
  for k in $(for _ in $(seq "$pairs"); do echo off 1ms; done); do
    if [ "$phase" = low ]; then n=$((secs * 100000)); rate=100000; else n=$full; rate=100000000; fi
    job "$phase-$k" "$n" "$rate" "$k" >"$work/j.yaml"
    "$work/streamd" run "$work/j.yaml" --elastic-log "$work/t-$phase-$k.csv" 2>"$work/log" >/dev/null
    wall=$(sed -nE 's/.* done in ([^ ]+) .*/\1/p' "$work/log")
    rps=$(sed -nE 's/.*\(([0-9]+) records\/s\).*/\1/p' "$work/log" | head -1)
    blocked=$(sed -nE 's/.*splitter blocked +([^ ]+).*/\1/p' "$work/log" | head -1)
    if [ "$phase" = low ]; then
      idx=$(awk -v b="$(secs_of "$blocked")" -v w="$(secs_of "$wall")" 'BEGIN { printf "%.4f", b/w }')
      per=$(awk -F, 'NR > 1 { s += $3; n++; if ($3 > m) m = $3 } END { printf "mean %.4f max %.4f over %d periods", s/n, m, n }' "$work/t-$phase-$k.csv")
      echo "low  linger $k: $rps records/s, blocked $blocked in $wall: index $idx; per period $per"
    else
      echo "full linger $k: $rps records/s (blocked $blocked in $wall)"
    fi
  done
  a=$(ls "$work"/out-$phase-*.csv | head -1)
  for f in "$work"/out-$phase-*.csv; do cmp -s "$a" "$f" || echo "OUTPUTS DIFFER: $f"; done
done
echo "outputs compared"
