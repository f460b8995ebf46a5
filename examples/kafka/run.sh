#!/usr/bin/env bash
# examples/kafka/run.sh — the Kafka example end to end on this machine: a
# loopback test cluster (cmd/kfake), the job (examples/kafka/job.yaml:
# windows into the topic `windows`, exactly-once), then the topic read
# back by kcat as a read_committed consumer, and the count of windows.
# Needs go, and kcat for the read-back. KAFKA_PORT (default 9092).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
port="${KAFKA_PORT:-9092}"
work="$(mktemp -d)"
go build -o "$work/streamd" ./cmd/streamd
go build -o "$work/kfake" ./cmd/kfake
"$work/kfake" -port "$port" -topic windows >"$work/kfake.log" 2>&1 &
kfake=$!
trap 'kill $kfake 2>/dev/null; wait $kfake 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do # until the cluster listens
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done
STREAMD_OUT="$work/out" KAFKA_BROKERS="127.0.0.1:$port" "$work/streamd" run examples/kafka/job.yaml
if command -v kcat >/dev/null; then
  n=$(kcat -C -b "127.0.0.1:$port" -t windows -e -q -X isolation.level=read_committed | wc -l)
  echo "windows in the topic (read_committed, kcat): $n"
else
  echo "kcat not found: install it (Debian: apt-get install kcat) to read the topic back" >&2
fi
