#!/usr/bin/env bash
# The many-core measurements, on a machine with no Go toolchain and no
# network, from binaries built here:
#
#   scripts/device.sh prep DIR      here: build what the others run into DIR
#   scripts/device.sh open DIR      there: the many-core figures: scaling, elastic, checkpoints, latency (a few minutes)
#   scripts/device.sh check DIR     there: ring and sched, keyed region, scaling by channels, flights
#   scripts/device.sh elastic DIR   there: the elastic demonstration, levels and DS2
#   scripts/device.sh ring DIR      there: the ring and sched benchmarks alone
#
# prep DIR (usually .dev, ignored by git; carry it): static x86-64 binaries
#   of streamd, the peers (perf/peers: Benthos, Go channels, DuckDB) and the
#   test binaries of ring, sched and core, gzipped to keep the carried tree
#   small (DIR/gz), plus the flights data (DIR/data). The DuckDB peer needs
#   cgo and a C++ toolchain here; it is linked statically against glibc (the
#   linker warns that dlopen, getpwuid and getaddrinfo would need glibc's
#   shared libraries at run time: the peer loads no extensions and opens only
#   local files, so it never calls them).
# The other commands unpack DIR/gz into a temporary directory (a DIR that
#   has bin/ instead, holding the binaries unzipped, is used as it is).
#
# open: each part under its own timeout; OUT (default a temporary
#   directory) receives the elastic timelines:
#   - efficiency at 1 … 16 cores with every stage inside k cores
#     (scripts/bench.sh scaling cores: the scaling and flights jobs
#     with source workers, channels and output workers), and the
#     serial fraction (scripts/bench.sh serial-fraction at 8
#     channels); source workers and channels trading cores
#     (scripts/jobs/scaling-elastic.yaml);
#   - the elastic demonstration, level controller and DS2 (elastic,
#     below);
#   - the controllers on the real runtime, the case that must
#     scale and the calibration of the simulator at 1, 2, 4 and 8
#     channels (scripts/bench.sh elastic, short; OUT/elastic-real/
#     calibration.txt is the file elastic/sim reads);
#   - checkpoint cost (scripts/bench.sh checkpoint, 3 pairs);
#   - latency at half the maximum rate (scripts/bench.sh
#     latency-half), Nexmark q0 q1 q2 q5 (closed loop), Benthos side
#     by side on the flights CSV and on generated records
#     (scripts/bench.sh peers);
#   parallel dataflow: the flights job against DuckDB (16 threads and 1)
#     and sqlite3 (Python's module, if there is a python3), outputs
#     compared value by value (scripts/bench.sh flights-peers, 14
#     channels; first, under a minute; also written to
#     OUT/flights-peers.txt).
#   Smaller runs (a smoke test on a small machine): STREAMD_COUNT,
#   STREAMD_RATE1, STREAMD_RATE2 (elastic), CKPT_RECORDS (checkpoint cost,
#   default 20000000), PEERS_COUNT.
# check: the ring and sched benchmarks (ring, below), the keyed-region
#   benchmark, the CPU-bound scaling workload at 1..14 channels and the
#   flights job at 1..12 channels (scripts/bench.sh scaling channels), the
#   flights report at 8 channels.
# elastic: examples/elastic/job.yaml (rate 1 M → 6 M → 1 M records/s) under
#   the level controller and under DS2, with their timelines (in OUT).
# ring: the machine, the usable CPU set as sched sees it, then producer and
#   consumer pinned to two distinct physical cores (ring vs Go channel,
#   round trip, pinned vs unpinned), then the ring and round trip on two SMT
#   siblings of one core when the machine has them; under about 90 s.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
what="${1:-}"
dir="${2:-}"
case "$what" in
  prep | open | check | elastic | ring) [ -n "$dir" ] || { echo "usage: scripts/device.sh $what DIR" >&2; exit 2; } ;;
  *) echo "usage: scripts/device.sh prep|open|check|elastic|ring DIR" >&2; exit 2 ;;
esac

binaries=(streamd benthos-peers gochan-peers duckdb-peer ring.test sched.test core.test)

prep() {
  set -eo pipefail
  mkdir -p "$dir/gz" "$dir/data"
  export CGO_ENABLED=0 GOOS=linux GOARCH=amd64
  local tmp b t
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  go_build "$tmp/streamd" "$root" ./cmd/streamd -ldflags='-s -w'
  go_build "$tmp/benthos-peers" "$root/perf/peers/benthos" . -ldflags='-s -w'
  go_build "$tmp/gochan-peers" "$root/perf/peers/gochan" . -ldflags='-s -w'
  CGO_ENABLED=1 go_build "$tmp/duckdb-peer" "$root/perf/peers/duckdb" . -tags netgo,osusergo \
    -ldflags='-s -w -linkmode external -extldflags "-static"' 2>"$tmp/ld.log" ||
    { cat "$tmp/ld.log" >&2; exit 1; }
  for t in ring sched core; do (cd "$root" && go test -c -ldflags='-s -w' -o "$tmp/$t.test" "./$t"); done
  for b in "${binaries[@]}"; do gzip -c "$tmp/$b" >"$dir/gz/$b.gz"; done
  cp "$data/flights-3m.parquet" "$data/airports.csv" "$dir/data/"
  du -sh "$dir"
}

# unpack: sets bin to a directory holding the binaries and exports
# STREAMD_BIN and STREAMD_DATA.
unpack() {
  [ -d "$dir" ] || { echo "scripts/device.sh: $dir is not a directory (make it with scripts/device.sh prep DIR)" >&2; exit 2; }
  dir=$(cd "$dir" && pwd)
  if [ -d "$dir/gz" ]; then
    bin=$(mktemp -d)
    local b
    for b in "${binaries[@]}"; do
      [ -f "$dir/gz/$b.gz" ] && gzip -dc "$dir/gz/$b.gz" >"$bin/$b" && chmod +x "$bin/$b"
    done
  else
    bin="$dir/bin"
  fi
  export STREAMD_BIN=$bin/streamd STREAMD_DATA=$dir/data
}

header() {
  echo "== $(date -u '+%Y-%m-%d %H:%M UTC') $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs, kernel $(uname -r)"
}

open() {
  local out="${OUT:-$bin}" q
  header
  echo "== parallel dataflow: flights against DuckDB and sqlite3"
  mkdir -p "$out"
  DUCKDB_PEER=$bin/duckdb-peer DUCKDB_THREADS=16 SOURCE_PARALLELISM=4 OUTPUT_WORKERS=4 SQLITE_RUNS=1 \
    timeout 120 "$root/scripts/bench.sh" flights-peers 3 14 2>&1 | tee "$out/flights-peers.txt"
  echo "== efficiency at k cores, serial fraction"
  STREAMD_RUNS=1 timeout 150 "$root/scripts/bench.sh" scaling cores scaling
  STREAMD_RUNS=1 timeout 60 "$root/scripts/bench.sh" scaling cores flights
  timeout 90 "$root/scripts/bench.sh" serial-fraction 1 8
  echo "== source workers and channels trading cores (elastic, auto source parallelism)"
  STREAMD_OUT=$bin timeout 60 "$STREAMD_BIN" run "$root/scripts/jobs/scaling-elastic.yaml" --elastic-log "$out/scaling-elastic.csv" 2>&1 |
    grep -E '^(job |rescales|  source |  worker |  channel |serial)'
  echo "== elastic"
  (OUT=$out elastic)
  echo "== elastic controllers, the case that must scale, calibration"
  OUT=$out/elastic-real CALIB_CHANNELS="1 2 4 8" CYCLES=1 SCALE_SECONDS=20 \
    timeout 150 "$root/scripts/bench.sh" elastic
  echo "== checkpoint cost"
  timeout 120 "$root/scripts/bench.sh" checkpoint "${CKPT_RECORDS:-20000000}" 1s 3
  echo "== latency at half the maximum rate"
  timeout 40 "$root/scripts/bench.sh" latency-half 3
  echo "== Nexmark"
  for q in q0 q1 q2 q5; do
    timeout 30 "$STREAMD_BIN" bench "nexmark-$q" --duration 4s --out "$bin/nexmark-$q" 2>&1 | grep -E '^(workload|machine|records/s|cpu|latency)'
  done
  echo "== Benthos side by side (CSV, then generated records)"
  PEERS_BIN_DIR=$bin UNBATCHED_RUNS=0 timeout 120 "$root/scripts/bench.sh" peers 2 csv 2>&1 | grep -v '^ *\(streamd\|gochan\|benthos\).* run [0-9]'
  PEERS_BIN_DIR=$bin UNBATCHED_RUNS=0 timeout 90 "$root/scripts/bench.sh" peers 2 generate 2>&1 | grep -v '^ *\(streamd\|gochan\|benthos\).* run [0-9]'
}

check() {
  header
  echo "== ring and sched"
  timeout 120 "$root/scripts/device.sh" ring "$dir"
  echo "== keyed region (core.test)"
  timeout 60 "$bin/core.test" -test.run x -test.bench 'KeyedRegion|WindowProcess' -test.benchtime 20000x 2>&1 | grep -E '^Benchmark|ok|FAIL'
  echo "== scaling: CPU-bound stateless region"
  timeout 150 "$root/scripts/bench.sh" scaling channels "$root/examples/scaling/job.yaml" 1 2 4 8 12 14
  echo "== scaling: flights job"
  timeout 60 "$root/scripts/bench.sh" scaling channels "$root/examples/flights/job.yaml" 1 2 4 8 12
  echo "== flights report at 8 channels"
  timeout 30 "$STREAMD_BIN" run "$root/examples/flights/job.yaml" --channels 8 2>&1 | tail -16
}

elastic() {
  local out=${OUT:-$(mktemp -d)} policy
  export STREAMD_OUT=$(mktemp -d)
  export STREAMD_RATE1=${STREAMD_RATE1:-1000000} STREAMD_RATE2=${STREAMD_RATE2:-6000000}
  export STREAMD_COUNT=${STREAMD_COUNT:-110000000} STREAMD_MAX_CHANNELS=${STREAMD_MAX_CHANNELS:-12}
  header
  for policy in levels ds2; do
    echo "== elastic: policy $policy, rate $STREAMD_RATE1 → $STREAMD_RATE2 (10 s–25 s) → $STREAMD_RATE1"
    STREAMD_POLICY=$policy timeout 120 "$STREAMD_BIN" run "$root/examples/elastic/job.yaml" \
      --elastic-log "$out/timeline-$policy.csv" 2>&1 | tail -22
    cat "$out/timeline-$policy.csv"
  done
}

ring() {
  local ring=$bin/ring.test schedt=$bin/sched.test f start allowed cpus topo a b="" s="" c
  for f in "$ring" "$schedt"; do
    [ -x "$f" ] || { echo "missing or not executable: $f" >&2; exit 2; }
  done
  start=$(date +%s)

  echo "== machine"
  date -u '+%Y-%m-%d %H:%M:%S UTC'
  grep -m1 'model name' /proc/cpuinfo || true
  echo "online cpus: $(cat /sys/devices/system/cpu/online 2>/dev/null) nproc: $(nproc)"
  uname -r

  echo "== usable cpu set (sched.Detect)"
  timeout 10 "$schedt" -test.run '^TestDetect$' -test.v 2>&1 | grep 'cpus:' || echo "(TestDetect failed)"

  # Choose two CPUs: cpu a = the first allowed CPU; b = the first allowed CPU
  # on another physical core of the same package; s = an SMT sibling of a.
  allowed=$(awk '/Cpus_allowed_list/ {print $2}' /proc/self/status)
  cpus=$(expand "$allowed" | tr '\n' ' ')
  topo=/sys/devices/system/cpu
  a=$(echo "$cpus" | awk '{print $1}')
  core_of() { cat "$topo/cpu$1/topology/core_id" 2>/dev/null || echo "$1"; }
  pkg_of() { cat "$topo/cpu$1/topology/physical_package_id" 2>/dev/null || echo 0; }
  for c in $cpus; do
    [ "$c" = "$a" ] && continue
    if [ "$(pkg_of "$c")" = "$(pkg_of "$a")" ]; then
      if [ "$(core_of "$c")" = "$(core_of "$a")" ]; then
        [ -z "$s" ] && s=$c
      elif [ -z "$b" ]; then
        b=$c
      fi
    fi
  done
  [ -z "$b" ] && b=$(echo "$cpus" | awk '{print $2}')
  echo "pair: cpu $a (core $(core_of "$a")) and cpu $b (core $(core_of "$b")); SMT sibling of $a: ${s:-none}"

  echo "== ring vs channel, two physical cores ($a,$b)"
  STREAMD_BENCH_CPUS=$a,$b timeout 45 "$ring" -test.run '^$' \
    -test.bench 'Transfer|RoundTrip|Pinning' -test.benchtime 1s 2>&1 |
    grep -E '^(Benchmark|cpu:|PASS|FAIL|ok)|panic' || echo "(ring benchmarks failed or timed out)"

  if [ -n "$s" ]; then
    echo "== ring, SMT siblings ($a,$s)"
    STREAMD_BENCH_CPUS=$a,$s timeout 15 "$ring" -test.run '^$' \
      -test.bench 'Transfer/ring|RoundTrip/atomic' -test.benchtime 1s 2>&1 |
      grep -E '^Benchmark|panic' || echo "(sibling benchmarks failed or timed out)"
  fi

  echo "== sched"
  timeout 10 "$schedt" -test.run '^$' -test.bench . -test.benchtime 1s 2>&1 |
    grep -E '^Benchmark|panic' || echo "(sched benchmarks failed or timed out)"

  echo "== done in $(( $(date +%s) - start )) s"
}

expand() { # "0-3,8" -> "0 1 2 3 8"
  local IFS=, r
  for r in $1; do
    case $r in *-*) seq "${r%-*}" "${r#*-}" ;; *) echo "$r" ;; esac
  done
}

[ "$what" = prep ] || unpack
"$what"
