#!/usr/bin/env bash
# device-prep.sh DIR — builds what scripts/device-open.sh runs on a machine
# with no Go toolchain and no network: static x86-64 binaries of streamd and
# the peers (perf/peers: Benthos, Go channels, DuckDB), gzipped to keep the
# carried tree small, plus the flights data. DIR is usually .dev (ignored by
# git; carry it). The DuckDB peer needs cgo and a C++ toolchain here; it is
# linked statically against glibc (the linker warns that dlopen, getpwuid
# and getaddrinfo would need glibc's shared libraries at run time: the peer
# loads no extensions and opens only local files, so it never calls them).
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
(cd "$root/perf/peers/duckdb" && CGO_ENABLED=1 go build -tags netgo,osusergo \
  -ldflags='-s -w -linkmode external -extldflags "-static"' -o "$tmp/duckdb-peer" . 2>"$tmp/ld.log") ||
  { cat "$tmp/ld.log" >&2; exit 1; }
for b in streamd benthos-peers gochan-peers duckdb-peer; do gzip -c "$tmp/$b" >"$dir/gz/$b.gz"; done
cp "$data/flights-3m.parquet" "$data/airports.csv" "$dir/data/"
du -sh "$dir"
