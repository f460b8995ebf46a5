#!/usr/bin/env bash
# scripts/bench.sh slowjob [records=300000] — a slow job: a generator
# (20,000 keys, a record per ms of event time), 2 channels, a keyed 1-minute
# window, and a `post:` lookup_http (ttl 0s, max_cost 100: almost every row
# misses) against scripts/internal/slowhttp answering in 0.5–2 ms, with
# `checkpoint: {interval: 1s}`. Runs the variants below one after the other
# and prints, for each, the records/s, the rows the lookup took per second,
# the checkpoint line (completed, duration p50/p99/max: barrier due →
# written) and the largest firing (rows out of the window per window end).
# The decomposition it measures is in docs/ARCHITECTURE.md, "Checkpoints
# behind a window's firing". REGION=1 in the environment runs instead the
# lookup inside the region, before the window (a slow operator per record,
# where the rings' floors set what is in flight), against a server
# answering in DELAY–DELAY_MAX (default 10ms–40ms); records default 20000;
# with BASE=<git revision> it alternates that revision's binary and this
# one, ROUNDS (default 2) times each (base first), on the same server;
# KEEPLOG=FILE keeps the last run's stderr there.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
n="${1:-300000}"
[ "${REGION:-0}" = 1 ] && n="${1:-20000}"
work="$(mktemp -d)"
trap 'kill "${srv:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
build_streamd "$work/streamd"
go_build "$work/slowhttp" "$root" ./scripts/internal/slowhttp
[ -z "${BASE:-}" ] || build_streamd_at "$BASE" "$work/streamd-base"
if [ "${REGION:-0}" = 1 ]; then
  "$work/slowhttp" -delay "${DELAY:-10ms}" -delay-max "${DELAY_MAX:-40ms}" >"$work/addr" &
else
  "$work/slowhttp" -delay 500us -delay-max 2ms >"$work/addr" &
fi
srv=$!
for _ in $(seq 50); do [ -s "$work/addr" ] && break; sleep 0.1; done
addr="$(cat "$work/addr")"
# job NAME SIZE MAXCOST RUNTIME
job() {
  cat <<YAML
name: slowjob
source:
  generator: {seed: 3, count: $n, keys: 20000, distribution: uniform, step: 1ms}
event_time: {field: ts}
region:
  channels: 2
  key_by: [key]
  ops:
    - window:
        size: $2
        aggregates: {n: count, total: sum(value)}
post:
  - lookup_http:
      url: http://$addr/cities/{key}
      key: key
      fields: {city: string}
      ttl: 0s
      max_cost: $3
sink:
  csv: {path: $work/out-$1.csv}
checkpoint: {dir: $work/ck-$1, interval: 1s, retain: 2}
$4
YAML
}
if [ "${REGION:-0}" = 1 ]; then
  cat >"$work/region.yaml" <<YAML
name: regionslow
source:
  generator: {seed: 3, count: $n, keys: 20000, distribution: uniform, step: 1ms}
event_time: {field: ts}
region:
  channels: 2
  key_by: [key]
  ops:
    - lookup_http:
        url: http://$addr/cities/{key}
        key: key
        fields: {city: string}
        max_cost: 100
    - window:
        size: 1m
        aggregates: {n: count, total: sum(value)}
sink:
  csv: {path: $work/out-region.csv}
checkpoint: {dir: $work/ck-region, interval: 1s, retain: 2}
YAML
  bins=streamd
  [ -n "${BASE:-}" ] && bins="streamd-base streamd"
  echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs; $n records; $(date -u +%F)"
  for round in $(seq "${ROUNDS:-2}"); do
    [ -z "${BASE:-}" ] && [ "$round" -gt 1 ] && break
    for bin in $bins; do
      rm -rf "$work/ck-region" "$work/out-region.csv"
      "$work/$bin" run "$work/region.yaml" 2>"$work/region.log" >/dev/null
      [ -n "${KEEPLOG:-}" ] && cp "$work/region.log" "$KEEPLOG"
      label=new
      [ "$bin" = streamd-base ] && label="base ${BASE}"
      [ -z "${BASE:-}" ] && label=run
      echo "$label, region lookup ${DELAY:-10ms}–${DELAY_MAX:-40ms}: $(sed -nE 's/.*\(([0-9]+) records\/s\).*/\1/p' "$work/region.log" | head -1) records/s"
      echo "  $(grep -h '^checkpoints:' "$work/region.log" || echo 'checkpoints: none')"
    done
  done
  exit 0
fi
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs; $n records; $(date -u +%F)"
# name | window size | max_cost | runtime block | flags
while IFS='|' read -r name size cost rt flags; do
  job "$name" "$size" "$cost" "$rt" >"$work/$name.yaml"
  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  "$work/streamd" run "$work/$name.yaml" $flags 2>"$work/$name.log" >/dev/null
  secs=$(echo "$(date +%s.%N) - $start" | bc)
  rows=$(($(wc -l <"$work/out-$name.csv") - 1))
  fire=$(awk -F, 'NR > 1 { c[$1]++ } END { m = 0; for (k in c) if (c[k] > m) m = c[k]; print m }' "$work/out-$name.csv")
  echo "$name: $(sed -nE 's/.*\(([0-9]+) records\/s\).*/\1/p' "$work/$name.log" | head -1) records/s, $(echo "$rows / $secs" | bc) rows/s through the lookup, largest firing $fire rows"
  echo "  $(grep -h '^checkpoints:' "$work/$name.log" || echo 'checkpoints: none')"
done <<'VARIANTS'
default|1m|100||
debloat-off|1m|100|runtime: {buffer_target: off}|
workers-2-output-2|1m|100||--source-parallelism 2 --output-workers 2
window-10s|10s|100||
cache-every-key|1m|20000||
VARIANTS
