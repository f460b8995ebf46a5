#!/usr/bin/env bash
# Fetches the flights example's data (3 M US flights and the airports table)
# from the npm package vega-datasets@3.2.1 and checks their sha256.
#
#   scripts/fetch-data.sh [DIR]     (default: ../shared/data beside the repo)
#
# Then run the example with STREAMD_DATA=DIR if DIR is not the default.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dest="${1:-$root/../shared/data}"
mkdir -p "$dest"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent vega-datasets@3.2.1 >/dev/null &&
  tar xzf vega-datasets-3.2.1.tgz package/data/flights-3m.parquet package/data/airports.csv)
check() {
  local file="$1" want="$2"
  local got
  got="$(sha256sum "$file" | cut -d' ' -f1)"
  if [ "$got" != "$want" ]; then
    echo "sha256 mismatch for $file: got $got, want $want" >&2
    exit 1
  fi
}
check "$tmp/package/data/flights-3m.parquet" dbeb920c90f59b6ccaff823dcc3d08f25a97fa1ce128d93f40be4e931f5900b0
check "$tmp/package/data/airports.csv" 903c7169e6d558eefb95295fe2947ec8503135fbb855ea5c737cf4a90ea603ad
cp "$tmp/package/data/flights-3m.parquet" "$tmp/package/data/airports.csv" "$dest/"
echo "data in $dest (sha256 verified)"
