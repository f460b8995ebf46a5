#!/usr/bin/env bash
# Scaling on this machine: a job at several channel counts, or at several
# core counts with every stage confined to them.
#
#   scripts/bench.sh scaling channels [job.yaml] [channel counts…]
#   scripts/bench.sh scaling cores    [scaling|flights] [core counts…]
#
# channels: runs the job (default examples/scaling/job.yaml) at 1, 2, 4, 8
#   channels (and 12, 14 where the machine has the cores) and prints a
#   speedup / efficiency table (speedup against the first count, same run)
#   and whether the stages were pinned.
# cores: efficiency at k cores with every stage inside k cores: each run is
#   confined with taskset to cores 0 … k-1, and efficiency = (best 1-core
#   throughput × k) ÷ throughput at k. The stages are split between source
#   workers (M), channels (N) and output workers (K) by a fixed rule per
#   job, printed with each row:
#     scaling (CPU-bound stateless region, no post operators): M = ⌈k/4⌉, N = k
#     flights (keyed window, lookup, CSV):                      M = ⌈k/4⌉, N = ⌈k/2⌉, K = ⌈k/4⌉
#   Core counts default to 1 2 4 8 and 12 14 16 where the machine has them;
#   STREAMD_COUNT sizes the scaling job (default 20 M records); each row is
#   the best of STREAMD_RUNS runs (default 2).
#
# STREAMD_BIN=path uses a prebuilt binary; STREAMD_DATA points at the
# flights data.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
what="${1:-}"
shift || true
case "$what" in
  channels | cores) ;;
  *) echo "usage: scripts/bench.sh scaling channels [job.yaml] [channel counts…] | cores [scaling|flights] [core counts…]" >&2; exit 2 ;;
esac
workdir
bin="$(streamd_bin "$work/streamd")"

channels() {
  local job="${1:-$root/examples/scaling/job.yaml}" counts n out line wall rate pinned base=""
  shift || true
  counts=("$@")
  if [ ${#counts[@]} -eq 0 ]; then
    counts=(1 2 4 8)
    for n in 12 14; do [ "$n" -le "$(($(nproc) - 2))" ] && counts+=("$n"); done
  fi
  export STREAMD_OUT="${STREAMD_OUT:-$work}"
  echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs; job $(basename "$(dirname "$job")")/$(basename "$job")"
  printf '%8s %10s %14s %8s %10s  %s\n' channels wall_s records/s speedup efficiency pinned
  for n in "${counts[@]}"; do
    # -v: the placement's info line says whether the stages ran pinned.
    out=$("$bin" run "$job" --channels "$n" -v 2>&1) || { echo "$out" >&2; exit 1; }
    wall=$(wall_of "$out")
    rate=$(rate_of "$out")
    pinned=yes; grep -q 'running unpinned' <<<"$out" && pinned=no
    [ -z "$base" ] && base="$wall"
    awk -v n="$n" -v w="$wall" -v r="$rate" -v b="$base" -v p="$pinned" \
      'BEGIN { s = b / w; printf "%8d %10.3f %14.0f %8.2f %10.2f  %s\n", n, w, r, s, s / n, p }'
  done
}

up() { echo $(( ($1 + $2 - 1) / $2 )); }

cores() {
  local job="${1:-scaling}" counts cores k m n kk args bestrate bestline out rate wall s cpu best1=""
  shift || true
  counts=("$@")
  cores=$(nproc)
  if [ ${#counts[@]} -eq 0 ]; then
    for k in 1 2 4 8 12 14 16; do [ "$k" -le "$cores" ] && counts+=("$k"); done
  fi
  export STREAMD_OUT="$work"
  local runs="${STREAMD_RUNS:-2}"
  echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $cores CPUs; job $job; $(date -u +%F)"
  printf '%6s %4s %4s %4s %10s %14s %11s %10s %9s\n' cores M N K wall_s records/s efficiency serial_% cpu_s
  for k in "${counts[@]}"; do
    m=$(up "$k" 4)
    case "$job" in
      scaling)
        n=$k; kk=0
        args=("$root/examples/scaling/job.yaml" --channels "$n" --source-parallelism "$m") ;;
      flights)
        n=$(up "$k" 2); kk=$(up "$k" 4)
        args=("$root/examples/flights/job.yaml" --channels "$n" --source-parallelism "$m" --output-workers "$kk") ;;
      *) echo "unknown job $job (scaling or flights)" >&2; exit 2 ;;
    esac
    bestrate=0; bestline=""
    for _ in $(seq 1 "$runs"); do
      out=$(taskset -c "0-$((k - 1))" "$bin" run "${args[@]}" 2>&1) || { echo "$out" >&2; exit 1; }
      rate=$(rate_of "$out")
      if [ "$rate" -gt "$bestrate" ]; then
        bestrate=$rate
        wall=$(wall_of "$out")
        s=$(sed -nE 's/^serial fraction +([0-9.]+) %.*/\1/p' <<<"$out" | head -1)
        cpu=$(sed -nE 's/^cpu: ([0-9.]+) s in all/\1/p' <<<"$out" | head -1)
        bestline="$wall $s $cpu"
      fi
    done
    read -r wall s cpu <<<"$bestline"
    [ -z "$best1" ] && best1=$(( bestrate / k ))
    awk -v c="$k" -v m="$m" -v n="$n" -v kk="$kk" -v w="$wall" -v r="$bestrate" -v b="$best1" -v s="${s:--}" -v cpu="${cpu:--}" \
      'BEGIN { printf "%6d %4d %4d %4d %10.3f %14.0f %11.2f %10s %9s\n", c, m, n, kk, w, r, r / (b * c), s, cpu }'
  done
}

"$what" "$@"
