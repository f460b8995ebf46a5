#!/usr/bin/env bash
# Profiles one benchmark workload: runs `streamd bench` with a CPU and a
# heap profile and prints the top of the CPU profile.
#
#   scripts/bench.sh profile WORKLOAD [bench flags…]   e.g. scripts/bench.sh profile keyed --duration 10s
#
# The profiles and the bench reports stay in bench-out/WORKLOAD/
# (cpu.pprof, mem.pprof); open them with `go tool pprof -http=: …`.
set -euo pipefail
if [ $# -lt 1 ]; then
	echo "usage: scripts/bench.sh profile WORKLOAD [streamd bench flags…]" >&2
	exit 2
fi
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
workload="$1"
shift
out="${OUT:-$root/bench-out/$workload}"
mkdir -p "$out"
bin="${STREAMD_BIN:-$out/streamd}"
build_streamd "$bin"
export STREAMD_DATA="${STREAMD_DATA:-$root/../shared/data}"
(cd "$root" && "$bin" bench "$workload" --out "$out" \
	--cpuprofile "$out/cpu.pprof" --memprofile "$out/mem.pprof" "$@")
echo
go tool pprof -top -nodecount="${NODES:-30}" "$bin" "$out/cpu.pprof"
