#!/usr/bin/env bash
# Runs streamd's whole test suite: every package under the race detector,
# including the end-to-end flights test against sqlite3 (needs ../shared/data
# beside the repository, or STREAMD_DATA, and sqlite3 on PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
go vet ./...
go test -race -count=1 -timeout 15m ./...
