#!/usr/bin/env bash
# streamd against Benthos v4.60.0 and a naive Go-channel pipeline, on the
# same input in one run (docs/PERFORMANCE-LOG.md, "Benthos and a Go-channel
# pipeline side by side").
#
# Pipeline, the same for all three (input csv, the default): the 3 M
# flights, exported once to CSV by streamd (scripts/jobs/flights-to-csv.yaml),
# read from that CSV file -> filter delay > 15 -> map delay_hours = delay /
# 60.0, route = origin + "-" + destination -> discard, counting records. The
# script checks that all three count the same records in and out.
#
# Input generate: each engine generates PEERS_COUNT (default 3 M) records
# itself — seq, key one of 1000 strings, value uniform in [0, 1000), ts —
# -> filter value >= 800 -> map scaled = value / 60.0, tag = key + "-" + key
# -> discard. The generator's time counts, as in published Nexmark results;
# each engine draws its own random values, so the script checks the records
# out are within 1 % of 20 % of the records in.
#
#   scripts/bench.sh peers [runs=3] [input=csv|generate]
#
# Environment: STREAMD_DATA (default ../shared/data beside the repository),
# PEERS_BATCH (Benthos csv input batch_count, or generate batch_size;
# default 512, streamd's batch size), UNBATCHED_RUNS (runs of Benthos with
# batches of 1, its default; 0 skips it; default 1), PEERS_COUNT (records
# generated; default 3000000), CHANNEL_BUF (Go-channel capacity; default 1024).
# PEERS_BIN_DIR: a directory holding prebuilt streamd, benthos-peers and
# gochan-peers (scripts/device.sh prep), instead of building them.
# Needs Go and, on the first run, the Go module proxy (Benthos's modules),
# unless PEERS_BIN_DIR is set.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
runs="${1:-3}"
input="${2:-csv}"
case "$input" in csv | generate) ;; *) echo "input $input: expected csv or generate" >&2; exit 2 ;; esac
data="${STREAMD_DATA:-$root/../shared/data}"
batch="${PEERS_BATCH:-512}"
unbatched_runs="${UNBATCHED_RUNS:-1}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if [ -n "${PEERS_BIN_DIR:-}" ]; then # prebuilt (a machine with no Go toolchain)
  for b in streamd benthos-peers gochan-peers; do ln -s "$PEERS_BIN_DIR/$b" "$work/$b"; done
else
  echo "building streamd, benthos-peers, gochan-peers ..." >&2
  build_streamd "$work/streamd"
  go_build "$work/benthos-peers" "$root/perf/peers/benthos" .
  go_build "$work/gochan-peers" "$root/perf/peers/gochan" .
fi

if [ "$input" = csv ]; then
  echo "exporting the flights to CSV ..." >&2
  STREAMD_DATA="$data" STREAMD_OUT="$work" "$work/streamd" run "$root/scripts/jobs/flights-to-csv.yaml" --quiet
  csv="$work/flights.csv"
  n_in=$(($(wc -l <"$csv") - 1))
else
  csv=""
  n_in="${PEERS_COUNT:-3000000}"
fi

# run CMD...: runs CMD, which must print "records_in=N records_out=M" on its
# standard output; prints "wall cpu in out": wall time of the whole process,
# start to exit, and its CPU time (user + system).
run() {
  local t
  t=$( { TIMEFORMAT='%R %U %S'; time "$@" >"$work/line" 2>"$work/err"; } 2>&1 ) || {
    cat "$work/err" >&2; exit 1; }
  awk -v t="$t" -v l="$(cat "$work/line")" 'BEGIN {
    split(t, x, " "); n = split(l, f, /[ =]/); for (i = 1; i < n; i++) v[f[i]] = f[i+1]
    printf "%.3f %.3f %d %d\n", x[1], x[2] + x[3], v["records_in"], v["records_out"] }'
}
job="$root/perf/peers/streamd-job.yaml" conf=pipeline.yaml
[ "$input" = csv ] || { job="$root/perf/peers/streamd-generate.yaml"; conf=pipeline-generate.yaml; }
streamd_run() { # the streamd report (stderr) gives the counts
  PEERS_CSV="$csv" PEERS_COUNT="$n_in" "$work/streamd" run "$job" >/dev/null 2>"$work/streamd.log"
  sed -n 's/.* \([0-9][0-9]*\) records in (.*), \([0-9][0-9]*\) out$/records_in=\1 records_out=\2/p' "$work/streamd.log"
}
benthos_run() {
  (cd "$root/perf/peers/benthos" && PEERS_CSV="$csv" PEERS_COUNT="$n_in" PEERS_BATCH="$1" "$work/benthos-peers" -config "$conf" -in "$n_in")
}
gochan_run() {
  if [ "$input" = csv ]; then "$work/gochan-peers" -csv "$csv" -buf "${CHANNEL_BUF:-1024}"
  else "$work/gochan-peers" -gen "$n_in" -buf "${CHANNEL_BUF:-1024}"; fi
}

# best K NAME CMD...: best (lowest wall time) of K runs; sets best_s, and
# best_c (lowest CPU time, not necessarily the same run), and checks the counts against the first engine's.
want_out=""
best() {
  local k="$1" name="$2" i r s c in out
  shift 2
  best_s=""; best_c=""
  for i in $(seq "$k"); do
    r=$(run "$@"); read -r s c in out <<<"$r"
    echo "  $name run $i: $s s wall, $c s CPU, in $in, out $out" >&2
    if [ "$in" != "$n_in" ]; then echo "$name: $in records in, want $n_in" >&2; exit 1; fi
    if [ "$input" = generate ]; then
      if ! awk -v o="$out" -v n="$n_in" 'BEGIN { exit !(o > 0.198 * n && o < 0.202 * n) }'; then
        echo "$name: $out records out, want 20 % (±1 %) of $n_in" >&2; exit 1; fi
      want_out="about 20 %"
    else
      if [ -z "$want_out" ]; then want_out="$out"; fi
      if [ "$out" != "$want_out" ]; then echo "$name: $out records out, want $want_out" >&2; exit 1; fi
    fi
    if [ -z "$best_s" ] || awk -v a="$s" -v b="$best_s" 'BEGIN { exit !(a < b) }'; then best_s="$s"; fi
    if [ -z "$best_c" ] || awk -v a="$c" -v b="$best_c" 'BEGIN { exit !(a < b) }'; then best_c="$c"; fi
  done
}

best "$runs" streamd streamd_run; sd=$best_s; sdc=$best_c
best "$runs" gochan gochan_run; gc=$best_s; gcc=$best_c
best "$runs" "benthos(batch $batch)" benthos_run "$batch"; bb=$best_s; bbc=$best_c
bu=""; buc=""
if [ "$unbatched_runs" -gt 0 ]; then
  best "$unbatched_runs" "benthos(batch 1)" benthos_run 1; bu=$best_s; buc=$best_c
fi

echo "date: $(date -u +%Y-%m-%dT%H:%MZ); machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$input" = csv ]; then
  echo "input: $n_in flights (CSV export), out: $want_out records (delay > 15); best of $runs; wall = whole process, start to exit; CPU = user + system"
else
  echo "input: $n_in records generated by each engine, out: $want_out (value >= 800); best of $runs; wall = whole process, start to exit; CPU = user + system"
fi
line() { awk -v n="$1" -v s="$2" -v c="$3" -v r="$n_in" 'BEGIN { printf "%-22s %8.3f s wall %12.0f records/s %8.3f s CPU\n", n, s, r / s, c }'; }
line streamd "$sd" "$sdc"
line "Go channels" "$gc" "$gcc"
line "Benthos (batch $batch)" "$bb" "$bbc"
[ -z "$bu" ] || line "Benthos (batch 1)" "$bu" "$buc"
awk -v sd="$sd" -v gc="$gc" -v bb="$bb" -v bu="$bu" -v sdc="$sdc" -v gcc="$gcc" -v bbc="$bbc" -v buc="$buc" -v b="$batch" 'BEGIN {
  printf "ratios (records/s, wall; CPU time in brackets):\n"
  printf "streamd / Benthos (batch %s): %5.1fx  (%5.1fx)\n", b, bb / sd, bbc / sdc
  if (bu != "") printf "streamd / Benthos (batch 1):   %5.1fx  (%5.1fx)\n", bu / sd, buc / sdc
  printf "streamd / Go channels:        %5.2fx  (%5.2fx)\n", gc / sd, gcc / sdc }'
