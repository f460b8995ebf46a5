#!/usr/bin/env bash
# Times the flights job against sqlite3 running the same aggregation on the
# same machine, in one run. sqlite3's table is loaded first (import not
# timed); streamd's time includes reading the Parquet file.
#
#   scripts/bench-flights.sh [runs=3] [channels=4]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runs="${1:-3}"
channels="${2:-4}"
export STREAMD_DATA="${STREAMD_DATA:-$root/../shared/data}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export STREAMD_OUT="$work"
bin="${STREAMD_BIN:-$work/streamd}"
[ -x "$bin" ] || (cd "$root" && go build -o "$bin" ./cmd/streamd)

"$bin" run "$root/scripts/jobs/flights-to-csv.yaml" --quiet
sqlite3 "$work/f.db" <<SQL
CREATE TABLE flights(date TEXT, delay INTEGER, distance INTEGER, origin TEXT, destination TEXT);
.mode csv
.import --skip 1 $work/flights.csv flights
.import $STREAMD_DATA/airports.csv airports
SQL
query="SELECT substr(date,1,13), f.origin, a.city, a.state, count(*), sum(delay > 15), avg(delay), max(delay), sum(distance)
FROM flights f LEFT JOIN airports a ON a.iata = f.origin GROUP BY substr(date,1,13), f.origin ORDER BY 1, 2;"

best() { sort -g | head -1; }
now() { date +%s.%N; }
sq=$(for i in $(seq "$runs"); do
  s=$(now); sqlite3 "$work/f.db" "$query" >"$work/sqlite.csv"; e=$(now)
  awk -v e="$e" -v s="$s" 'BEGIN { print e - s }'
done | best)
sd=$(for i in $(seq "$runs"); do
  s=$(now); "$bin" run "$root/examples/flights/job.yaml" --quiet --channels "$channels"; e=$(now)
  awk -v e="$e" -v s="$s" 'BEGIN { print e - s }'
done | best)
rows=$(($(wc -l <"$work/flights-hourly.csv") - 1))
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs"
printf 'sqlite3 query:      %.3f s  (%d rows)\n' "$sq" "$(wc -l <"$work/sqlite.csv")"
printf 'streamd flights:    %.3f s  (%d rows, %d channels, %.2f M records/s)\n' "$sd" "$rows" "$channels" "$(awk -v d="$sd" 'BEGIN { print 3 / d }')"
printf 'ratio (sqlite3 / streamd): %.1fx\n' "$(awk -v q="$sq" -v d="$sd" 'BEGIN { print q / d }')"
