#!/usr/bin/env bash
# scripts/bench.sh elastic — the elastic controllers on the real runtime, as
# measurements (not tests: the figures depend on the machine and its load).
# Issue "Elastic controller quality" and docs/PERFORMANCE-LOG.md, "Elastic
# controllers on the real runtime". Three parts, each policy in turn:
#
#  1. calibrate: the job below with the controller off, no rate limit, at
#     each count of CALIB_CHANNELS (default "1 2"): records/s of each,
#     written to OUT/calibration.txt for the simulator (elastic/sim,
#     Calibration; docs/PERFORMANCE-LOG.md, "Calibrating the simulator"), with
#     the p99 channel pause of part 3's changes appended at the end.
#  2. sine: offered load MEAN ±30 % (SINE_MEAN, default 450k records/s) in
#     20 s cycles (1 s steps of the generator's rate_steps), CYCLES cycles,
#     1–4 channels: changes per cycle after the first.
#  3. must scale: a constant load of SCALE_FACTOR (default 1.3) × the
#     measured 1-channel rate for SCALE_SECONDS: throughput over the second
#     half ≥ 97 % of the offered load, and the largest backlog then.
#
# The job is examples/elastic's (a keyed region: map expressions, then a
# 1-minute window per key over 100,000 keys) with copies of its map: one
# for the sine (SINE_WORK, the issue's case, which one channel carries on 2
# cores), WORK (default 10) for the calibration and the case that must
# scale, so that the channel, not the source, is the bottleneck.
# Writes timelines (--elastic-log) and a summary to OUT (default a temp
# dir). STREAMD_BIN: a prebuilt streamd (default: go build). BASELINE_BIN:
# a second binary (e.g. the commit before a change): parts 2 and 3 then
# run baseline and STREAMD_BIN alternately, REPEAT times each (default 2:
# A B A B), files tagged -base and -new. The load average is printed
# before each run: on a shared machine read the figures with it.
#
#   nice scripts/bench.sh elastic                 # 2 cores: ~6 minutes
#   CYCLES=6 SINE_MEAN=450000 scripts/bench.sh elastic
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
bin=${STREAMD_BIN:-$out/streamd}
if [ -z "${STREAMD_BIN:-}" ]; then
  build_streamd "$bin" || exit 1
fi
work=${WORK:-10} sinework=${SINE_WORK:-1} cycles=${CYCLES:-4} mean=${SINE_MEAN:-450000}
factor=${SCALE_FACTOR:-1.3} secs=${SCALE_SECONDS:-40} policies=${POLICIES:-levels ds2}
echo "== $(date -u '+%Y-%m-%d %H:%M UTC') $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null), WORK=$work SINE_WORK=$sinework"

# job NAME COUNT POLICY CHANNELS MAX STEPS...: writes $out/NAME.yaml; STEPS
# are "at_seconds:rate" (none: no rate limit).
job() {
  local name=$1 count=$2 policy=$3 channels=$4 maxch=$5
  shift 5
  {
    echo "name: $name"
    echo "source:"
    echo "  generator:"
    echo "    seed: 11"
    echo "    count: $count"
    echo "    keys: 100000"
    echo "    step: 1us"
    echo "    start: 2026-01-01T00:00:00Z"
    if [ $# -gt 0 ]; then
      echo "    rate_steps:"
      for s in "$@"; do echo "      - {at: ${s%%:*}s, rate: ${s##*:}}"; done
    fi
    echo "event_time:"
    echo "  field: ts"
    echo "region:"
    echo "  channels: $channels"
    echo "  key_by: [key]"
    echo "  elastic:"
    echo "    policy: $policy"
    echo "    period: 1s"
    echo "    min_channels: 1"
    echo "    max_channels: $maxch"
    echo "  ops:"
    for w in $(seq "$work"); do
      echo "    - map:"
      echo "        a$w: (value * 31 + seq % 97) % 1009"
      echo "        b$w: (value * value + seq) % 7919"
      echo "        c$w: (seq * 2654435761) % 1000003"
      echo "        d$w: \"value > 500 ? (seq % 13) * value : (seq % 17) + value\""
      echo "        e$w: ((value + 1) * (value + 3) * (value + 7)) % 65521"
      echo "        f$w: (seq % 4001 + value * 13) % 4001"
    done
    echo "    - window:"
    echo "        size: 1m"
    echo "        aggregates:"
    echo "          n: count"
    echo "          mix: sum(a1)"
    echo "          top: max(e$work)"
    echo "sink:"
    echo "  csv:"
    echo "    path: $out/$name.out.csv"
  } >"$out/$name.yaml"
}

# rate LOG: the "records/s" of a finished run's summary line.
rate() { grep -o 'records in ([0-9]*' "$1" | grep -o '[0-9]*$'; }

load() { cut -d' ' -f1-3 /proc/loadavg; }
calib=$out/calibration.txt
echo "== 1. calibrate (controller off, no rate limit, ${CALIB_COUNT:-2000000} records)"
{
  echo "# scripts/bench.sh elastic calibration, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs, commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null), WORK=$work, ${CALIB_COUNT:-2000000} records"
} >"$calib"
for ch in ${CALIB_CHANNELS:-1 2}; do
  job calib$ch ${CALIB_COUNT:-2000000} off $ch $ch
  echo "# load average before $ch channels: $(load)" | tee -a "$calib" | sed 's/^# /  /'
  "$bin" run "$out/calib$ch.yaml" >"$out/calib$ch.log" 2>&1
  eval "r$ch=$(rate "$out/calib$ch.log")"
  eval "echo rate $ch \$r$ch" >>"$calib"
  grep -E 'records in|^ +[0-9]+ +records' "$out/calib$ch.log"
done
echo "one channel $r1 records/s, two $r2 ($(awk -v a="$r1" -v b="$r2" 'BEGIN{printf "%.2f", b/a}')x)"

# The binaries of parts 2 and 3, alternating: "tag path" pairs.
runs=() reps=${REPEAT:-1}
[ -n "${BASELINE_BIN:-}" ] && reps=${REPEAT:-2}
for i in $(seq "$reps"); do
  if [ -n "${BASELINE_BIN:-}" ]; then runs+=("base $BASELINE_BIN" "new $bin"); else runs+=("new $bin"); fi
done

# changes TIMELINE CYCLE: changes per cycle (applied decisions by cycle).
changes() {
  awk -F, -v cyc="$2" 'NR>1 && $8=="true" {n[int($1/cyc)]++} NR>1 {last=int($1/cyc)}
    END {for (k=0; k<=last; k++) printf "%d ", n[k]+0; print ""}' "$1"
}

echo "== 2. sine: $mean records/s ±30 %, 20 s cycles, $cycles cycles, 1–4 channels"
steps=() count=0
for t in $(seq 0 $((20 * cycles - 1))); do
  r=$(awk -v m="$mean" -v t="$t" 'BEGIN{printf "%d", m*(1+0.3*sin(2*3.14159265358979*(t+0.5)/20))}')
  steps+=("$t:$r") count=$((count + r))
done
k=0
for r in "${runs[@]}"; do
  tag=${r%% *} b=${r#* } k=$((k + 1))
  for p in $policies; do
    n=sine-$p-$tag-$k
    work=$sinework job "$n" $count $p 1 4 "${steps[@]}"
    echo "$p $tag (load $(load)): "
    "$b" run "$out/$n.yaml" --elastic-log "$out/$n.csv" >"$out/$n.log" 2>&1
    echo "  $(grep -o 'done in [0-9.ms]*' "$out/$n.log") (intended $((20 * cycles)) s); changes per cycle: $(changes "$out/$n.csv" 20)"
    grep -E '^rescales' "$out/$n.log" | sed 's/^/  /'
  done
done

offered=$(awk -v r="$r1" -v f="$factor" 'BEGIN{printf "%d", r*f}')
echo "== 3. must scale: $offered records/s ($factor × one channel) for $secs s, 1–4 channels"
k=0
for r in "${runs[@]}"; do
  tag=${r%% *} b=${r#* } k=$((k + 1))
  for p in $policies; do
    n=scale-$p-$tag-$k
    job "$n" $((offered * secs)) $p 1 4 "0:$offered"
    echo "$p $tag (load $(load)):"
    "$b" run "$out/$n.yaml" --elastic-log "$out/$n.csv" >"$out/$n.log" 2>&1
    echo "  $(grep -o 'done in [0-9.ms]*' "$out/$n.log") (intended $secs s); changes: $(changes "$out/$n.csv" 1000)"
    grep -E '^rescales' "$out/$n.log" | sed 's/^/  /'
    awk -F, -v from="$((secs / 2))" -v off="$offered" 'NR>1 && $7 !~ /^ctl:/ && $1>=from && $1<'"$secs"' {
        n++; tp+=$4; if ($10>b) b=$10; ch=$2 }
      END { if (n) printf "  second half: throughput %.0f records/s = %.1f %% of offered; backlog max %d records (%.2f s of load); channels %d\n", tp/n, 100*tp/n/off, b, b/off, ch }' "$out/$n.csv"
  done
done
# The calibration's pause: the largest p99 channel pause of the new
# binary's must-scale runs (Go durations: µs, ms, s).
pause=$(grep -ho 'channel pause p50 [^,]*, p99 [^,]*' "$out"/scale-*-new-*.log 2>/dev/null | sed 's/.*p99 //' |
  awk '{ v=$1; u=v; sub(/[0-9.]+/, "", u); sub(/[^0-9.].*/, "", v);
         ns = (u=="s") ? v*1e9 : (u=="ms") ? v*1e6 : (u=="µs" || u=="us") ? v*1e3 : v;
         if (ns > m) m = ns } END { if (m) printf "%.0fus", m/1e3 }')
if [ -n "$pause" ]; then echo "pause $pause" >>"$calib"; fi
echo "== calibration ($calib):"; cat "$calib"
echo "== files in $out"
