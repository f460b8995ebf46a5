#!/usr/bin/env bash
# The pause of a rebalance step against state size (docs/PERFORMANCE.md,
# "Rebalancing"): a generator job (COUNT records 1 µs apart, uniform keys,
# a 10-minute window that fires only at the end, 2 channels) with random
# steps (rebalance: {random_every: 40, seed: 3}) and without (off), at
# 10 K and 1 M keys, for two binaries alternating A B A B in one script:
# OLD (built from git commit OLDREV, default c630fcb) and this tree.
# Prints records/s and the report's rebalance line per run, and checks
# that every run of one key count writes the same bytes.
#   scripts/bench-rebalance-pause.sh [ROUNDS] [COUNT] [OLDREV]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
count=${2:-3000000}
oldrev=${3:-c630fcb}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/oldsrc"
git archive "$oldrev" | tar -x -C "$tmp/oldsrc"
(cd "$tmp/oldsrc" && go build -o "$tmp/old" ./cmd/streamd)
go build -o "$tmp/new" ./cmd/streamd
job() { # keys mode
  local reb=""
  [ "$2" = random ] && reb="  rebalance: {random_every: 40, seed: 3}"
  cat <<YAML
name: pause
source:
  generator: {seed: 1, count: $count, keys: $1, distribution: uniform, step: 1us}
event_time: {field: ts}
region:
  channels: 2
  key_by: [key]
$reb
  ops:
    - window: {size: 10m, aggregates: {n: count, total: sum(value)}}
sink:
  csv: {path: $tmp/out-$1-$2.csv}
YAML
}
echo "date: $(date -u +%F\ %T) UTC; machine: $(nproc) vCPU, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-); load: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
  for keys in 10000 1000000; do
    for mode in off random; do
      job "$keys" "$mode" > "$tmp/job-$keys-$mode.yaml"
      for bin in old new; do
        out=$("$tmp/$bin" run "$tmp/job-$keys-$mode.yaml" 2>&1)
        rate=$(grep -o '([0-9]* records/s)' <<<"$out" || true)
        line=$(grep '^rebalance:' <<<"$out" | sed 's/^rebalance: //' || true)
        echo "round $r keys $keys $mode $bin: $rate ${line:+| $line} | load $(cut -d' ' -f1 /proc/loadavg)"
        sum=$(md5sum < "$tmp/out-$keys-$mode.csv" | cut -c1-12)
        ref="$tmp/sum-$keys"
        [ -f "$ref" ] || echo "$sum" > "$ref"
        [ "$sum" = "$(cat "$ref")" ] || { echo "  OUTPUT DIFFERS ($sum vs $(cat "$ref"))"; exit 1; }
      done
    done
  done
done
echo "outputs identical per key count"
