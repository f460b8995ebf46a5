#!/usr/bin/env bash
# scripts/fuzz.sh [fuzztime=1m] — fuzzing, part of the long test tier
# (scripts/test-long.sh): runs `go test -fuzz` on every fuzz target of the
# module (every func FuzzXxx in a _test.go file, found afresh each run, so
# new targets are picked up) for fuzztime each (a Go duration, or Nx for N
# inputs). The fast tier (scripts/test.sh) runs the targets' seed corpora
# only, as plain tests. A failing input is written to the package's
# testdata/fuzz/FuzzXxx/ (commit it: it becomes part of the seed corpus)
# and the script goes on with the other targets, then exits non-zero.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$root"
fuzztime="${1:-1m}"
status=0
targets=0
# Package directories of this module (perf/peers is a module of its own).
pkgs="$(go list -f '{{.Dir}}' ./...)" || exit 1
while IFS=: read -r file name; do
  dir="$(dirname "$file")"
  grep -qxF "$PWD/${dir#./}" <<<"$pkgs" || continue
  targets=$((targets + 1))
  echo "fuzz ${dir#./} $name for $fuzztime"
  corpus="$dir/testdata/fuzz/$name"
  before=$(ls "$corpus" 2>/dev/null | wc -l)
  if ! out=$(go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$dir" 2>&1); then
    echo "$out" | tail -20
    after=$(ls "$corpus" 2>/dev/null | wc -l)
    if [ "$after" = "$before" ] && grep -q 'context deadline exceeded' <<<"$out"; then
      # Go's fuzzer can report its own deadline passing while it minimises
      # an input on a busy machine; without a failing input that is no
      # finding.
      echo "scripts/fuzz.sh: $name in ${dir#./}: the fuzzer's deadline passed (no failing input): not a failure"
    else
      echo "scripts/fuzz.sh: $name in ${dir#./} FAILED (input under ${corpus#./}/)"
      status=1
    fi
  else
    echo "$out" | tail -2
  fi
done < <(grep -rHo --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*' . | sed 's/func //' | sort)
echo "scripts/fuzz.sh: $targets fuzz targets, $fuzztime each"
exit "$status"
