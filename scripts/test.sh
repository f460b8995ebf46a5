#!/usr/bin/env bash
# Runs streamd's whole test suite: every package under the race detector,
# then the end-to-end flights test (3 M rows, 5 channel counts, against
# sqlite3) without it, where the race detector would only slow it ~5x (the
# same runtime paths run under -race in core's own tests). Needs
# ../shared/data beside the repository (or STREAMD_DATA) and sqlite3.
set -euo pipefail
cd "$(dirname "$0")/.."
go vet ./...
go test -race -count=1 -timeout 10m -skip 'TestFlightsJobMatchesSQLite' ./...
go test -count=1 -timeout 10m -run 'TestFlightsJobMatchesSQLite' -v ./cmd/streamd | grep -E '^(=== RUN|--- |PASS|FAIL|ok)'
