#!/usr/bin/env bash
# device-open.sh DIR — the many-core measurements the open issues still
# need, in one run of a few minutes, from what scripts/device-prep.sh put in
# DIR (no Go toolchain needed):
#   issue 11: efficiency at 1 … 16 cores with every stage inside k cores
#            (scripts/scaling-cores.sh: the scaling and flights jobs with
#            source workers, channels and output workers), and the serial
#            fraction (scripts/serial-fraction.sh at 8 channels); source
#            workers and channels trading cores (scripts/jobs/scaling-elastic.yaml);
#   issue 4: the elastic demonstration, level controller and DS2
#            (scripts/device-elastic.sh without sqlite3);
#   issue 13: the controllers on the real runtime, the case that must
#            scale and the calibration of the simulator at 1, 2, 4 and 8
#            channels (scripts/elastic-real.sh, short; OUT/elastic-real/
#            calibration.txt is the file elastic/sim reads);
#   issue 5: checkpoint cost (scripts/bench-checkpoint.sh, 3 pairs);
#   issue 6: latency at half the maximum rate (scripts/latency-half.sh),
#            Nexmark q0 q1 q2 q5 (closed loop), Benthos side by side on the
#            flights CSV and on generated records (scripts/peers.sh);
#   parallel dataflow: the flights job against DuckDB (16 threads and 1)
#            and sqlite3 (Python's module, if there is a python3), outputs
#            compared value by value (scripts/flights-peers.sh, 14 channels;
#            first, under a minute; also written to OUT/flights-peers.txt).
# Each part runs under its own timeout; OUT (default a temporary
# directory) receives the elastic timelines. Smaller runs (a smoke test on
# a small machine): STREAMD_COUNT, STREAMD_RATE1, STREAMD_RATE2 (elastic),
# CKPT_RECORDS (checkpoint cost, default 20000000), PEERS_COUNT.
set -u
dir=$(cd "${1:?usage: device-open.sh DIR}" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(mktemp -d)
for b in streamd benthos-peers gochan-peers duckdb-peer; do gzip -dc "$dir/gz/$b.gz" >"$bin/$b" && chmod +x "$bin/$b"; done
mkdir -p "$bin/bin" && ln -s "$bin/streamd" "$bin/bin/streamd"
export STREAMD_BIN=$bin/streamd STREAMD_DATA=$dir/data
echo "== $(date -u '+%Y-%m-%d %H:%M UTC') $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs, kernel $(uname -r)"
echo "== parallel dataflow: flights against DuckDB and sqlite3"
mkdir -p "${OUT:-$bin}"
DUCKDB_PEER=$bin/duckdb-peer DUCKDB_THREADS=16 SOURCE_PARALLELISM=4 OUTPUT_WORKERS=4 SQLITE_RUNS=1 \
  timeout 120 "$root/scripts/flights-peers.sh" 3 14 2>&1 | tee "${OUT:-$bin}/flights-peers.txt"
echo "== issue 11: efficiency at k cores, serial fraction"
STREAMD_RUNS=1 timeout 150 "$root/scripts/scaling-cores.sh" scaling
STREAMD_RUNS=1 timeout 60 "$root/scripts/scaling-cores.sh" flights
timeout 90 "$root/scripts/serial-fraction.sh" 1 8
echo "== issue 11: source workers and channels trading cores (elastic, auto source parallelism)"
STREAMD_OUT=$bin timeout 60 "$STREAMD_BIN" run "$root/scripts/jobs/scaling-elastic.yaml" --elastic-log "${OUT:-$bin}/scaling-elastic.csv" 2>&1 |
  grep -E '^(job |rescales|  source |  channel |serial)'
echo "== issue 4: elastic"
timeout 260 "$root/scripts/device-elastic.sh" "$bin"
echo "== issue 13: elastic controllers, the case that must scale, calibration"
OUT=${OUT:-$bin}/elastic-real CALIB_CHANNELS="1 2 4 8" CYCLES=1 SCALE_SECONDS=20 \
  timeout 150 "$root/scripts/elastic-real.sh"
echo "== issue 5: checkpoint cost"
timeout 120 "$root/scripts/bench-checkpoint.sh" "${CKPT_RECORDS:-20000000}" 1s 3
echo "== issue 6: latency at half the maximum rate"
timeout 40 "$root/scripts/latency-half.sh" 3
echo "== issue 6: Nexmark"
for q in q0 q1 q2 q5; do
  timeout 30 "$STREAMD_BIN" bench "nexmark-$q" --duration 4s --out "$bin/nexmark-$q" 2>&1 | grep -E '^(workload|machine|records/s|cpu|latency)'
done
echo "== issue 6: Benthos side by side (CSV, then generated records)"
PEERS_BIN_DIR=$bin UNBATCHED_RUNS=0 timeout 120 "$root/scripts/peers.sh" 2 csv 2>&1 | grep -v '^ *\(streamd\|gochan\|benthos\).* run [0-9]'
PEERS_BIN_DIR=$bin UNBATCHED_RUNS=0 timeout 90 "$root/scripts/peers.sh" 2 generate 2>&1 | grep -v '^ *\(streamd\|gochan\|benthos\).* run [0-9]'
