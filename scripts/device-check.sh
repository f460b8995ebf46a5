#!/usr/bin/env bash
# device-check.sh DIR — the many-core measurements, from prebuilt static
# binaries, on a machine with no Go toolchain. DIR holds bin/{streamd,
# ring.test,sched.test,core.test} and data/{flights-3m.parquet,airports.csv}:
#
#   export CGO_ENABLED=0
#   go build -o DIR/bin/streamd ./cmd/streamd
#   go test -c -o DIR/bin/ring.test ./ring     (and sched, core)
#
# Runs, each under its own timeout: ring and sched benchmarks
# (scripts/device-ring.sh), the keyed-region benchmark, the CPU-bound
# scaling workload at 1..14 channels, and the flights job at 1..12 channels.
set -u
dir=$(cd "${1:?usage: device-check.sh DIR}" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
export STREAMD_BIN=$dir/bin/streamd STREAMD_DATA=$dir/data
echo "== $(date -u '+%Y-%m-%d %H:%M UTC') $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs, kernel $(uname -r)"
echo "== ring and sched"
timeout 120 "$root/scripts/device-ring.sh" "$dir/bin"
echo "== keyed region (core.test)"
timeout 60 "$dir/bin/core.test" -test.run x -test.bench 'KeyedRegion|WindowProcess' -test.benchtime 20000x 2>&1 | grep -E '^Benchmark|ok|FAIL'
echo "== scaling: CPU-bound stateless region"
timeout 150 "$root/scripts/scaling.sh" "$root/examples/scaling/job.yaml" 1 2 4 8 12 14
echo "== scaling: flights job"
timeout 60 "$root/scripts/scaling.sh" "$root/examples/flights/job.yaml" 1 2 4 8 12
echo "== flights report at 8 channels"
timeout 30 "$STREAMD_BIN" run "$root/examples/flights/job.yaml" --channels 8 2>&1 | tail -16
