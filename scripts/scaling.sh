#!/usr/bin/env bash
# Runs a job at 1..N channels on this machine and prints a speedup /
# efficiency table (speedup against 1 channel, same run).
#
#   scripts/scaling.sh [job.yaml] [channel counts...]
# defaults: examples/scaling/job.yaml, 1 2 4 8 (and more where the machine
# has the cores). STREAMD_BIN=path uses a prebuilt binary.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
job="${1:-$root/examples/scaling/job.yaml}"
shift || true
counts=("$@")
if [ ${#counts[@]} -eq 0 ]; then
  counts=(1 2 4 8)
  cores=$(nproc)
  for n in 12 14; do [ "$n" -le "$((cores - 2))" ] && counts+=("$n"); done
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export STREAMD_OUT="${STREAMD_OUT:-$work}"
bin="${STREAMD_BIN:-$work/streamd}"
[ -x "$bin" ] || (cd "$root" && go build -o "$bin" ./cmd/streamd)
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs; job $(basename "$(dirname "$job")")/$(basename "$job")"
printf '%8s %10s %14s %8s %10s  %s\n' channels wall_s records/s speedup efficiency pinned
base=""
for n in "${counts[@]}"; do
  out=$("$bin" run "$job" --channels "$n" 2>&1) || { echo "$out" >&2; exit 1; }
  line=$(grep -m1 '^job ' <<<"$out")
  wall=$(sed -E 's/.* in ([0-9.]+)(m?s) .*/\1 \2/' <<<"$line" | awk '{ if ($2=="ms") print $1/1000; else print $1 }')
  rate=$(sed -E 's/.*\(([0-9]+) records\/s\).*/\1/' <<<"$line")
  pinned=yes; grep -q 'running unpinned' <<<"$out" && pinned=no
  [ -z "$base" ] && base="$wall"
  awk -v n="$n" -v w="$wall" -v r="$rate" -v b="$base" -v p="$pinned" \
    'BEGIN { s = b / w; printf "%8d %10.3f %14.0f %8.2f %10.2f  %s\n", n, w, r, s, s / n, p }'
done
