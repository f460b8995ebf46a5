#!/usr/bin/env bash
# scripts/bench.sh NAME [args…] — runs the benchmark script NAME
# (scripts/bench/NAME.sh: each says in its first lines what it measures,
# how, and its arguments and environment). Without NAME, or with --help,
# lists them.
#
#   scripts/bench.sh scaling channels          speedup by channel count
#   scripts/bench.sh rebalance zipf            region.rebalance off / count / auto
#   scripts/bench.sh flights-peers 3 2         the flights job against DuckDB and sqlite3
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
name="${1:-}"
if [ -z "$name" ] || [ "$name" = --help ] || [ "$name" = -h ] || [ ! -f "$root/scripts/bench/$name.sh" ]; then
  [ -z "$name" ] || [ "$name" = --help ] || [ "$name" = -h ] || echo "scripts/bench.sh: no benchmark $name" >&2
  cat <<'LIST'
usage: scripts/bench.sh NAME [args…], NAME one of:
  backpressure     checkpoints under sustained backpressure (HTTP lookups), base vs this tree
  batching         adaptive batching at the splitter (runtime.batch_linger), on and off
  checkpoint       the cost of checkpoints, with and without, side by side
  elastic          the elastic controllers on the real runtime; the simulator's calibration
  flights-peers    the flights job against DuckDB and sqlite3, outputs compared value by value
  latency-half     latency at half the maximum rate
  paired           this tree against a base commit: A B A B whole processes, median ratios
  peers            streamd against Benthos and a Go-channel pipeline (flights CSV or generated)
  profile          one `streamd bench` workload under the CPU and heap profilers
  rebalance        rebalancing: zipf (off/count/auto), pause (step pause vs state), q5
  scaling          scaling by channels, or by cores with every stage inside them (taskset)
  serial-fraction  the serial fraction s of a job, run by run
  slowjob          a slow job (HTTP lookups at 0.5–2 ms): checkpoints and status under load
LIST
  case "$name" in "" | --help | -h) exit 0 ;; *) exit 2 ;; esac
fi
shift
exec bash "$root/scripts/bench/$name.sh" "$@"
