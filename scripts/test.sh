#!/usr/bin/env bash
# Runs streamd's whole test suite: every package under the race detector,
# then the end-to-end tests on the real data (the flights job against
# sqlite3 at 5 channel counts; the flights and a 1 M-key generator job under
# random live channel changes) without it, where the race detector would
# only slow them ~5x: the same runtime paths run under -race in core's own
# tests. Needs ../shared/data beside the repository (or STREAMD_DATA, an
# absolute path) and sqlite3.
set -euo pipefail
cd "$(dirname "$0")/.."
e2e='TestFlightsJobMatchesSQLite|TestRescaledJobsMatchStatic|TestKillRestoreExactlyOnce'
go vet ./...
go test -race -count=1 -timeout 10m -skip "$e2e" ./...
go test -count=1 -timeout 10m -run "$e2e" ./cmd/streamd
