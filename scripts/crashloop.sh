#!/usr/bin/env bash
# crashloop.sh JOB.yaml OUTPUT [rounds=20] [kills=3] — soak test of
# checkpoints and exactly-once output. JOB must have a checkpoint: section;
# OUTPUT is the file its sink writes (as the job resolves it).
#
# Runs the job once uncrashed (the reference), then `rounds` times: start,
# SIGKILL, restart with --restore latest (afresh when no checkpoint exists
# yet) — kills times — then let the last run finish, and compare its output
# with the reference. Every run gets a random --channels (1–4) and
# --source-parallelism (1–3), so restores change both. Every other kill
# comes within 0.2 s after the run's first new checkpoint (so that restores
# happen however fast or slow the machine is); the others at a random
# moment, also before any checkpoint. A final run that does not end
# within RUN_TIMEOUT (default 120 s) is a hang: the script fails.
#
# At the end it prints one line of figures — rounds, crashes, restores,
# identical outputs, rows lost and rows duplicated (by comparing the sorted
# outputs: a row missing from the output counts as lost, a row in it more
# often than in the reference as duplicated) — and fails if any output
# differs, if a run hung, or if no run was ever restored from a checkpoint
# (the kills proved nothing). SEED=… replays a loop (bash $RANDOM).
set -euo pipefail
job="${1:?usage: crashloop.sh JOB.yaml OUTPUT [rounds] [kills]}"
out="${2:?usage: crashloop.sh JOB.yaml OUTPUT [rounds] [kills]}"
rounds="${3:-20}"
kills="${4:-3}"
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bin="$(streamd_bin "$root/bin/streamd")"
run_timeout="${RUN_TIMEOUT:-120}"
ckdir="$(grep -A3 '^checkpoint:' "$job" | sed -nE 's/.*dir: *([^,}]+).*/\1/p' | head -1 | xargs)"
case "$ckdir" in /*) ;; *) ckdir="$(dirname "$job")/$ckdir" ;; esac
RANDOM="${SEED:-$$}"

checkpoints() { { ls -d "$ckdir"/chk-* 2>/dev/null || true; } | wc -l; }
# run_args: a fresh run's arguments, with --restore latest when a
# checkpoint exists (counted in restores).
restores=0
run_args() {
  args=(run "$job" --quiet --channels $((RANDOM % 4 + 1)) --source-parallelism $((RANDOM % 3 + 1)))
  if [ "$(checkpoints)" -gt 0 ]; then
    args+=(--restore latest)
    restores=$((restores + 1))
  fi
}

rm -rf "$ckdir" "$out" "$out.parts"
timeout "$run_timeout" "$bin" run "$job" --quiet
ref="$out.reference"
cp "$out" "$ref"
crashes=0 identical=0 lost=0 duplicated=0 failed=0
for round in $(seq "$rounds"); do
  seed=$RANDOM
  RANDOM=$seed
  rm -rf "$ckdir" "$out" "$out.parts"
  for k in $(seq "$kills"); do
    run_args
    before=$(checkpoints)
    "$bin" "${args[@]}" &
    pid=$!
    if [ $((k % 2)) -eq 1 ]; then
      # Within 0.2 s after the run's first new checkpoint.
      while kill -0 "$pid" 2>/dev/null && [ "$(checkpoints)" -le "$before" ]; do sleep 0.005; done
      sleep "$(printf '0.%03d' $((RANDOM % 200)))"
    else
      sleep "0.$((RANDOM % 9 + 1))"
    fi
    if kill -9 "$pid" 2>/dev/null; then
      crashes=$((crashes + 1))
    fi
    wait "$pid" 2>/dev/null || true
  done
  run_args
  set +e
  timeout "$run_timeout" "$bin" "${args[@]}"
  status=$?
  set -e
  if [ "$status" -ne 0 ]; then
    echo "round $round (seed $seed): the final run failed (exit $status; 124: it hung)" >&2
    exit 1
  fi
  if cmp -s "$out" "$ref"; then
    identical=$((identical + 1))
  else
    failed=$((failed + 1))
    # Rows lost (in the reference, not in the output) and duplicated (in
    # the output more often than in the reference), as multisets.
    l=$(diff <(sort "$ref") <(sort "$out") | grep -c '^<' || true)
    d=$(diff <(sort "$ref") <(sort "$out") | grep -c '^>' || true)
    lost=$((lost + l))
    duplicated=$((duplicated + d))
    echo "round $round (seed $seed): OUTPUT DIFFERS ($l rows lost, $d rows duplicated)" >&2
  fi
done
echo "crashloop $(basename "$job"): $rounds rounds, $crashes crashes, $restores restores, $identical identical outputs, $lost rows lost, $duplicated rows duplicated"
if [ "$failed" -gt 0 ]; then
  exit 1
fi
if [ "$restores" -eq 0 ]; then
  echo "crashloop: no run was restored from a checkpoint: the kills came too early and proved nothing" >&2
  exit 1
fi
