#!/usr/bin/env bash
# scripts/bench.sh backpressure [records=150000] [pairs=2] [base=8026cf0] — checkpoints
# under sustained backpressure: a keyed generator job whose region looks each
# record up over HTTP on a server that answers in 1 ms (scripts/internal/
# slowhttp; a 64-key cache, 5,000 keys, so most lookups wait) with
# `checkpoint: {interval: 1s, timeout: 2s}` (a checkpoint not complete within
# twice its interval counts as timed out), run by the base binary (built from commit BASE,
# before buffer debloating and end-of-input barriers) and by this tree's,
# alternating A B A B. The generator has a rate (far above what the job
# reaches), which keeps the single source stage: source workers place
# barriers inside blocks (8,192 records, seconds here); WORKERS=M in the
# environment drops the rate and sets source.parallelism: M, so that M
# source workers read the generator's blocks instead (WORKERS=1: one
# worker). Prints each run's records/s and checkpoint line (completed,
# timed out, duration p50/p99/max: barrier due → written).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
n="${1:-150000}"
pairs="${2:-2}"
genrate=", rate: 1000000"
parallelism=""
if [ "${WORKERS:-0}" -gt 0 ]; then
  genrate=""
  parallelism="
  parallelism: $WORKERS"
fi
base="${3:-8026cf0}"
work="$(mktemp -d)"
trap 'kill "${srv:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
build_streamd "$work/new"
go_build "$work/slowhttp" "$root" ./scripts/internal/slowhttp
build_streamd_at "$base" "$work/base"
"$work/slowhttp" -delay 1ms >"$work/addr" &
srv=$!
for _ in $(seq 50); do [ -s "$work/addr" ] && break; sleep 0.1; done
addr="$(cat "$work/addr")"
job() {
  cat <<YAML
name: backpressure
source:
  generator: {seed: 3, count: $n, keys: 5000, distribution: uniform, step: 1ms$genrate}$parallelism
event_time: {field: ts}
region:
  channels: 1
  key_by: [key]
  ops:
    - lookup_http:
        url: http://$addr/cities/{key}
        key: key
        fields: {city: string}
        max_cost: 64
        timeout: 10s
    - window:
        size: 1m
        aggregates: {n: count, total: sum(value)}
sink:
  csv: {path: $work/out-$1.csv}
checkpoint: {dir: $work/ck-$1, interval: 1s, timeout: 2s, retain: 2}
YAML
}
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs; $n records, lookups of 1 ms; $(date -u +%F)"
for k in $(for _ in $(seq "$pairs"); do echo base new; done); do
  job "$k" >"$work/$k.yaml"
  rm -rf "$work/ck-$k"
  "$work/$k" run "$work/$k.yaml" 2>"$work/$k.log" >/dev/null
  rate=$(sed -nE 's/.*\(([0-9]+) records\/s\).*/\1/p' "$work/$k.log" | head -1)
  echo "$k: $rate records/s; $(grep -h '^checkpoints:' "$work/$k.log" || echo 'checkpoints: none')"
done
cmp -s "$work/out-base.csv" "$work/out-new.csv" && echo "outputs identical" || echo "OUTPUTS DIFFER"
