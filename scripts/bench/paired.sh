#!/usr/bin/env bash
# scripts/bench.sh paired BASE [pairs=8] — the current working tree against BASE (a
# commit), whole processes, alternating A B / B A, every pair printed, then
# the median of the pairs' ratios (current ÷ base) of wall time and of CPU
# time (user + system). Each build runs its own tree's job files.
#
# Cells (CELLS="flights:2 q5:4 …" picks some; "default" is the job's own
# channel count):
#   flights:N   examples/flights/job.yaml, 3 M Parquet rows (needs the data:
#               STREAMD_DATA, default ../shared/data); outputs compared
#   q5:N        streamd bench nexmark-q5 --count Q5_COUNT (default 1 M)
#   keyed:N     streamd bench keyed --count KEYED_COUNT (default 3 M)
#   keyed1m:N   a generator over 1 M uniform keys, 1-minute windows, into a
#               CSV file (the job of scripts/bench.sh checkpoint), KEYED1M_COUNT
#               records (default 3 M)
#   keyed1mck:N the same with a checkpoint every second: the script then
#               prints each build's checkpoint cost (CPU with ÷ without)
#   pipeline:N  streamd bench pipeline --count PIPE_COUNT (default 10 M)
# and, after the cells, LATENCY_ROUNDS (default 3) rounds of
# scripts/bench.sh latency-half per build: reported, not gated (noisy on small
# VMs); LATENCY_ROUNDS=0 skips them.
#
# Ratios below 1 mean the current tree is faster. On a shared machine quote
# the median and look at the spread; a ratio whose pairs straddle 1 is noise.
# Environment: KEEP=DIR keeps the per-run logs; BASE_BIN / CUR_BIN use
# prebuilt binaries instead of building.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
usage="usage: scripts/bench.sh paired BASE [pairs=8]   (BASE a commit; CELLS, LATENCY_ROUNDS, KEEP, BASE_BIN, CUR_BIN: see the header of scripts/bench/paired.sh)"
fail() { echo "scripts/bench.sh paired: $*" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "$usage" >&2; exit 2; }
base="$1"
pairs="${2:-8}"
cells="${CELLS-flights:1 flights:2 flights:4 flights:default q5:1 q5:2 q5:4 q5:default keyed:1 keyed:2 keyed:4 keyed:default keyed1m:1 keyed1m:2 keyed1m:4 keyed1m:default keyed1mck:default pipeline:1 pipeline:2 pipeline:4 pipeline:default}"
data="$(cd "$data" 2>/dev/null && pwd || echo "$data")"

# Everything is checked before anything is built.
git -C "$root" rev-parse -q --verify "$base^{commit}" >/dev/null || fail "BASE $base is not a commit of this repository"
[[ "$pairs" =~ ^[0-9]+$ ]] && [ "$pairs" -ge 1 ] || fail "pairs must be a whole number ≥ 1, not $pairs"
rounds="${LATENCY_ROUNDS:-3}"
[[ "$rounds" =~ ^[0-9]+$ ]] || fail "LATENCY_ROUNDS must be a whole number (0 skips the latency rounds), not $rounds"
kinds="flights q5 keyed keyed1m keyed1mck pipeline"
[ -n "${cells// /}" ] || fail "CELLS is empty (expected KIND:N or KIND:default, KIND one of ${kinds// /, })"
for cell in $cells; do
  kind="${cell%%:*}" n="${cell#*:}"
  [[ " $kinds " == *" $kind "* ]] || fail "unknown cell kind $kind in CELLS (expected KIND:N or KIND:default, KIND one of ${kinds// /, })"
  [ "$kind" != "$cell" ] || fail "cell $cell in CELLS: expected $cell:N or $cell:default (N the channel count)"
  [ "$n" = default ] || [[ "$n" =~ ^[1-9][0-9]*$ ]] || fail "cell $cell: the channel count must be a whole number ≥ 1 or default, not $n"
  if [ "$kind" = flights ] && [ ! -f "$data/flights-3m.parquet" ]; then
    fail "cell $cell needs $data/flights-3m.parquet (set STREAMD_DATA to the directory holding it; scripts/fetch-data.sh fetches it)"
  fi
done
for b in "${BASE_BIN:-}" "${CUR_BIN:-}"; do
  [ -z "$b" ] || [ -x "$b" ] || fail "$b (BASE_BIN or CUR_BIN) is not an executable file"
done
workdir
[ -n "${KEEP:-}" ] && mkdir -p "$KEEP"

# The two trees and their binaries: B is BASE, A the working tree.
binA="${CUR_BIN:-$work/streamd-cur}"
binB="${BASE_BIN:-$work/streamd-base}"
[ -n "${CUR_BIN:-}" ] || build_streamd "$binA"
mkdir -p "$work/base.src"
git -C "$root" archive "$base" | tar -x -C "$work/base.src" # its own job files
[ -n "${BASE_BIN:-}" ] || build_streamd "$binB" "$work/base.src"
treeA="$root"
treeB="$work/base.src"

keyed1m() { # keyed1m SIDE OUT [checkpoint-dir]
  keyed1m_job keyed-1m "${KEYED1M_COUNT:-3000000}" "$2"
  [ -z "${3:-}" ] || echo "checkpoint: {dir: $3, interval: 1s, retain: 2}"
}

# one SIDE CELL RUN: runs the cell once with side A or B; prints "wall cpu".
one() {
  local side="$1" kind="${2%%:*}" n="${2##*:}" run="$3" bin tree ch=()
  if [ "$side" = A ]; then bin="$binA" tree="$treeA"; else bin="$binB" tree="$treeB"; fi
  [ "$n" = default ] || ch=(--channels "$n")
  local out="$work/out-$side" log="$work/log-$side-${2/:/-}-$run"
  rm -rf "$out" && mkdir -p "$out"
  local cmd
  case "$kind" in
  flights) cmd=(env STREAMD_DATA="$data" STREAMD_OUT="$out" "$bin" run "$tree/examples/flights/job.yaml" "${ch[@]}") ;;
  q5) cmd=("$bin" bench nexmark-q5 --duration 0 --count "${Q5_COUNT:-1000000}" --out "$out/b" "${ch[@]}") ;;
  keyed) cmd=("$bin" bench keyed --duration 0 --count "${KEYED_COUNT:-3000000}" --out "$out/b" "${ch[@]}") ;;
  pipeline) cmd=("$bin" bench pipeline --duration 0 --count "${PIPE_COUNT:-10000000}" --out "$out/b" "${ch[@]}") ;;
  keyed1m) keyed1m "$side" "$out/k.csv" >"$work/k-$side.yaml"
    cmd=("$bin" run "$work/k-$side.yaml" "${ch[@]}") ;;
  keyed1mck) keyed1m "$side" "$out/k.csv" "$out/ck" >"$work/k-$side.yaml"
    cmd=("$bin" run "$work/k-$side.yaml" "${ch[@]}") ;;
  *) echo "unknown cell $2" >&2; exit 2 ;;
  esac
  /usr/bin/time -f '%e %U %S' -o "$work/time" "${cmd[@]}" >"$log" 2>&1 || { echo "run failed: ${cmd[*]}" >&2; tail -5 "$log" >&2; exit 1; }
  [ -z "${KEEP:-}" ] || cp "$log" "$KEEP/"
  awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }' "$work/time"
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else printf "%.3f\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

machine
echo "A = working tree ($(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD || echo +changes)), B = $base; $pairs pairs per cell; ratio = A / B"
summary="$work/summary"
for cell in $cells; do
  : >"$work/rw"; : >"$work/rc"; : >"$work/cA"; : >"$work/cB"
  for p in $(seq "$pairs"); do
    if [ $((p % 2)) = 1 ]; then a=$(one A "$cell" "$p"); b=$(one B "$cell" "$p")
    else b=$(one B "$cell" "$p"); a=$(one A "$cell" "$p"); fi
    if [ "$p" = 1 ] && [ "${cell%%:*}" = flights ]; then
      if cmp -s "$work/out-A/flights-hourly.csv" "$work/out-B/flights-hourly.csv"; then same="outputs identical"; else same="OUTPUTS DIFFER"; fi
    else same=""; fi
    read -r wa ca <<<"$a"; read -r wb cb <<<"$b"
    rw=$(awk -v x="$wa" -v y="$wb" 'BEGIN { printf "%.3f", x / y }')
    rc=$(awk -v x="$ca" -v y="$cb" 'BEGIN { printf "%.3f", x / y }')
    echo "$rw" >>"$work/rw"; echo "$rc" >>"$work/rc"; echo "$ca" >>"$work/cA"; echo "$cb" >>"$work/cB"
    printf '%-18s pair %2d  wall A %6.3f B %6.3f  A/B %s   cpu A %6.3f B %6.3f  A/B %s  %s\n' "$cell" "$p" "$wa" "$wb" "$rw" "$ca" "$cb" "$rc" "$same"
  done
  line=$(printf '%-18s median wall A/B %s [%s..%s]   cpu A/B %s [%s..%s]' "$cell" \
    "$(median <"$work/rw")" "$(sort -g "$work/rw" | head -1)" "$(sort -g "$work/rw" | tail -1)" \
    "$(median <"$work/rc")" "$(sort -g "$work/rc" | head -1)" "$(sort -g "$work/rc" | tail -1)")
  echo "$line"; echo "$line" >>"$summary"
  cp "$work/cA" "$work/cpuA-$cell"; cp "$work/cB" "$work/cpuB-$cell"; cp "$work/rc" "$work/rc-$cell"
done

echo; echo "summary (median of $pairs pairs; [min..max] of the pairs):"; cat "$summary"
# The checkpoint cost: CPU with checkpoints ÷ without, per build, from the
# medians of the keyed1m and keyed1mck cells at the same channel count.
for c in $cells; do
  [ "${c%%:*}" = keyed1mck ] || continue
  plain="keyed1m:${c##*:}"
  [ -f "$work/cpuA-$plain" ] || continue
  for s in A B; do
    awk -v w="$(median <"$work/cpu$s-$c")" -v o="$(median <"$work/cpu$s-$plain")" -v s="$s" -v c="$c" \
      'BEGIN { printf "checkpoint cost %s (%s): CPU with ÷ without %.3f (+%.1f %%)\n", s, c, w / o, (w / o - 1) * 100 }'
  done
  # The cost above compares cells run minutes apart: on a shared machine a
  # change of load between them moves both builds' figures. The paired
  # ratios do not see it: A's CPU with checkpoints over B's, divided by the
  # same without, is (1 + cost A) / (1 + cost B).
  awk -v w="$(median <"$work/rc-$c")" -v o="$(median <"$work/rc-$plain")" -v c="$c" \
    'BEGIN { printf "checkpoint cost A relative to B (%s), from the paired CPU ratios: (1 + cost A) / (1 + cost B) = %.3f / %.3f = %.3f\n", c, w, o, w / o }'
done

if [ "$rounds" -gt 0 ]; then
  echo; echo "latency at half the maximum rate (pipeline; reported, not gated):"
  for s in A B; do
    if [ "$s" = A ]; then bin="$binA"; else bin="$binB"; fi
    echo "-- $s"; STREAMD_BIN="$bin" bash "$root/scripts/bench/latency-half.sh" "$rounds" pipeline | grep -E 'open loop' || true
  done
fi
