#!/usr/bin/env bash
# Measures the serial fraction s (docs/PERFORMANCE.md, "Serial fraction") of
# the jobs the parallel-dataflow work is judged on: the CPU-bound stateless
# scaling job, the flights job and Nexmark q5. s is the CPU work (thread
# CPU time less waiting on rings) of the stages that are not replicated —
# the single source stage, the merger, the writer — over the process's CPU
# less all waiting; streamd reports it at the end of every run. flights-par
# is the flights job with 2 source workers and 2 output workers. Amdahl's
# bound on 14 cores is 1 / (s + (1 − s) / 14).
#
#   scripts/bench.sh serial-fraction [runs] [channels]
#
# defaults: 3 runs of each job, 2 channels. STREAMD_BIN=path uses a prebuilt
# binary; STREAMD_BASE=path also runs a baseline binary, alternating with
# it (A B A B) in the same script, so that before and after come from one
# run. A binary too old to report s shows "-". Needs ../shared/data (or
# STREAMD_DATA) for the flights job.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
runs="${1:-3}"
channels="${2:-2}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export STREAMD_OUT="$work"
export STREAMD_COUNT="${STREAMD_COUNT:-5000000}"
bin="$(streamd_bin "$work/streamd")"
bins=("$bin")
[ -n "${STREAMD_BASE:-}" ] && bins=("$STREAMD_BASE" "$bin")

# s from a run's report: "serial fraction 49.3 % …" (streamd run) or
# "serial fraction  25.2 % …" (streamd bench).
sfrac() { sed -nE 's/^serial fraction +([0-9.]+) %.*/\1/p' <<<"$1" | head -1; }
wall() {
  local line
  line=$(grep -m1 -E '^(job |wall)' <<<"$1" || true)
  case "$line" in
    job*) sed -E 's/.* in ([0-9.]+)(m?s) .*/\1 \2/' <<<"$line" | awk '{ if ($2=="ms") print $1/1000; else print $1 }' ;;
    wall*) awk '{ v=$2; if (v ~ /ms$/) { sub(/ms$/, "", v); print v/1000 } else { sub(/s$/, "", v); print v } }' <<<"$line" ;;
  esac
}

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs; $runs runs, $channels channels, $(date -u +%F)"
printf '%-10s %-28s %4s %9s %12s\n' job binary run wall_s serial_%
for job in scaling flights flights-par q5; do
  for i in $(seq 1 "$runs"); do
    for b in "${bins[@]}"; do
      case "$job" in
        scaling) out=$("$b" run "$root/examples/scaling/job.yaml" --channels "$channels" 2>&1) ;;
        flights) out=$("$b" run "$root/examples/flights/job.yaml" --channels "$channels" 2>&1) ;;
        flights-par)
          # 2 source workers and 2 output workers (a binary from before
          # them does not know the flags: skipped).
          if ! "$b" run --help 2>&1 | grep -q -- --output-workers; then
            printf '%-10s %-28s %4d %9s %12s\n' "$job" "$(basename "$b")" "$i" - -
            continue
          fi
          out=$("$b" run "$root/examples/flights/job.yaml" --channels "$channels" --source-parallelism 2 --output-workers 2 2>&1) ;;
        q5) out=$("$b" bench nexmark-q5 --duration 3s --channels "$channels" --out "$work/q5" 2>&1) ;;
      esac || { echo "$out" >&2; exit 1; }
      s=$(sfrac "$out"); [ -n "$s" ] || s=-
      printf '%-10s %-28s %4d %9s %12s\n' "$job" "$(basename "$b")" "$i" "$(wall "$out")" "$s"
    done
  done
done
