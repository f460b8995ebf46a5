#!/usr/bin/env bash
# Efficiency at k cores with every stage inside k cores: each run is
# confined with taskset to cores 0 … k-1, and efficiency =
# (best 1-core throughput × k) ÷ throughput at k.
# The stages are split between source workers (M), channels (N) and output
# workers (K) by a fixed rule per job, printed with each row:
#   scaling (CPU-bound stateless region, no post operators): M = ⌈k/4⌉, N = k
#   flights (keyed window, lookup, CSV):                      M = ⌈k/4⌉, N = ⌈k/2⌉, K = ⌈k/4⌉
#
#   scripts/scaling-cores.sh [job] [core counts...]
# job is scaling (default) or flights; core counts default to 1 2 4 8 and
# 12 14 16 where the machine has them. STREAMD_BIN=path uses a prebuilt
# binary; STREAMD_COUNT sizes the scaling job (default 20 M records);
# STREAMD_DATA points at the flights data. Each row is the best of
# STREAMD_RUNS runs (default 2).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
job="${1:-scaling}"
shift || true
counts=("$@")
cores=$(nproc)
if [ ${#counts[@]} -eq 0 ]; then
  counts=()
  for k in 1 2 4 8 12 14 16; do [ "$k" -le "$cores" ] && counts+=("$k"); done
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export STREAMD_OUT="$work"
bin="${STREAMD_BIN:-$work/streamd}"
[ -x "$bin" ] || (cd "$root" && go build -o "$bin" ./cmd/streamd)
runs="${STREAMD_RUNS:-2}"
up() { echo $(( ($1 + $2 - 1) / $2 )); }
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $cores CPUs; job $job; $(date -u +%F)"
printf '%6s %4s %4s %4s %10s %14s %11s %10s %9s\n' cores M N K wall_s records/s efficiency serial_% cpu_s
best1=""
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
    line=$(grep -m1 '^job ' <<<"$out")
    rate=$(sed -E 's/.*\(([0-9]+) records\/s\).*/\1/' <<<"$line")
    if [ "$rate" -gt "$bestrate" ]; then
      bestrate=$rate
      wall=$(sed -E 's/.* in ([0-9.]+)(m?s) .*/\1 \2/' <<<"$line" | awk '{ if ($2=="ms") print $1/1000; else print $1 }')
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
