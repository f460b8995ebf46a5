#!/usr/bin/env bash
# Rebalancing (docs/PERFORMANCE-LOG.md, "Rebalancing"): three measurements, each
# alternating its settings A B A B within one run, ROUNDS rounds (default 3),
# after a line naming the machine and its load.
#
#   scripts/bench.sh rebalance zipf  [ROUNDS] [COUNT]           [OLDREV=c630fcb in the environment]
#   scripts/bench.sh rebalance pause [ROUNDS] [COUNT] [OLDREV]
#   scripts/bench.sh rebalance q5    [ROUNDS] [EVENTS]
#
# zipf: the quick-start Zipf job with region.rebalance off and auto, COUNT
#   records (default 8 M); prints records/s, records per channel and the
#   rebalance line, and checks that every setting gives the same output
#   bytes. A third setting, "count", runs the counters without ever
#   rebalancing (target_skew: 100): the cost of measuring. With OLDREV set
#   (a git commit), a fourth, "auto-old", runs auto with the binary built
#   from that commit, alternating with this tree's.
# pause: the pause of a rebalance step against state size: a generator job
#   (COUNT records 1 µs apart, default 3 M, uniform keys, a 10-minute window
#   that fires only at the end, 2 channels) with random steps (rebalance:
#   {random_every: 40, seed: 3}) and without (off), at 10 K and 1 M keys,
#   for two binaries: OLD (built from git commit OLDREV, default c630fcb)
#   and this tree. Prints records/s and the report's rebalance line per
#   run, and checks that every run of one key count writes the same bytes.
# q5: Nexmark q5 (hot auctions, 2 channels) with the loads counted only and
#   with rebalancing auto, EVENTS events (default 4 M), from one test binary
#   (perf/nexmark BenchmarkQ5Rebalance).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$root"
what="${1:-}"
case "$what" in
  zipf | pause | q5) shift ;;
  *) echo "usage: scripts/bench.sh rebalance zipf|pause|q5 [ROUNDS] [COUNT|EVENTS] [OLDREV]" >&2; exit 2 ;;
esac
rounds=${1:-3}
shift || true
workdir
tmp="$work"

zipf() {
  local count=${1:-8000000} modes="off count auto" mode spec r bin out m
  build_streamd "$tmp/streamd"
  if [ -n "${OLDREV:-}" ]; then
    build_streamd_at "$OLDREV" "$tmp/streamd-old"
    modes="off count auto auto-old"
  fi
  machine
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
}

pause() {
  local count=${1:-3000000} oldrev=${2:-c630fcb} r keys mode bin out rate line sum ref
  build_streamd_at "$oldrev" "$tmp/old"
  build_streamd "$tmp/new"
  machine
  for r in $(seq "$rounds"); do
    for keys in 10000 1000000; do
      for mode in off random; do
        pause_job "$count" "$keys" "$mode" > "$tmp/job-$keys-$mode.yaml"
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
}

pause_job() { # count keys mode
  local reb=""
  [ "$3" = random ] && reb="  rebalance: {random_every: 40, seed: 3}"
  cat <<YAML
name: pause
source:
  generator: {seed: 1, count: $1, keys: $2, distribution: uniform, step: 1us}
event_time: {field: ts}
region:
  channels: 2
  key_by: [key]
$reb
  ops:
    - window: {size: 10m, aggregates: {n: count, total: sum(value)}}
sink:
  csv: {path: $tmp/out-$2-$3.csv}
YAML
}

q5() {
  local events=${1:-4000000} r mode
  go test -c -o "$tmp/nexmark.test" ./perf/nexmark
  machine
  for r in $(seq "$rounds"); do
    for mode in count auto; do
      "$tmp/nexmark.test" -test.run '^$' -test.bench "Q5Rebalance/$mode\$" -test.benchtime "${events}x" | grep Q5Rebalance | sed "s/^/round $r: /; s/\$/ load $(cut -d' ' -f1 /proc/loadavg)/"
    done
  done
}

"$what" "$@"
