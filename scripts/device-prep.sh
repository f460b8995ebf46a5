#!/usr/bin/env bash
# device-prep.sh DIR — builds what scripts/device-open.sh runs on a machine
# with no Go toolchain and no network: static x86-64 binaries of streamd and
# the two peers (perf/peers), gzipped to keep the carried tree small, plus
# the flights data. DIR is usually .dev (ignored by git; carry it).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:?usage: device-prep.sh DIR}"
data="${STREAMD_DATA:-$root/../shared/data}"
mkdir -p "$dir/gz" "$dir/data"
export CGO_ENABLED=0 GOOS=linux GOARCH=amd64
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && go build -ldflags='-s -w' -o "$tmp/streamd" ./cmd/streamd)
(cd "$root/perf/peers/benthos" && go build -ldflags='-s -w' -o "$tmp/benthos-peers" .)
(cd "$root/perf/peers/gochan" && go build -ldflags='-s -w' -o "$tmp/gochan-peers" .)
for b in streamd benthos-peers gochan-peers; do gzip -c "$tmp/$b" >"$dir/gz/$b.gz"; done
cp "$data/flights-3m.parquet" "$data/airports.csv" "$dir/data/"
du -sh "$dir"
