#!/usr/bin/env bash
# Profiles one benchmark workload: runs `streamd bench` with a CPU and a
# heap profile and prints the top of the CPU profile.
#
#   scripts/profile.sh WORKLOAD [bench flags…]   e.g. scripts/profile.sh keyed --duration 10s
#
# The profiles and the bench reports stay in bench-out/WORKLOAD/
# (cpu.pprof, mem.pprof); open them with `go tool pprof -http=: …`.
set -euo pipefail
if [ $# -lt 1 ]; then
	echo "usage: $0 WORKLOAD [streamd bench flags…]" >&2
	exit 2
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
workload="$1"
shift
out="${OUT:-$root/bench-out/$workload}"
mkdir -p "$out"
bin="${STREAMD_BIN:-$out/streamd}"
(cd "$root" && go build -o "$bin" ./cmd/streamd)
export STREAMD_DATA="${STREAMD_DATA:-$root/../shared/data}"
(cd "$root" && "$bin" bench "$workload" --out "$out" \
	--cpuprofile "$out/cpu.pprof" --memprofile "$out/mem.pprof" "$@")
echo
go tool pprof -top -nodecount="${NODES:-30}" "$bin" "$out/cpu.pprof"
