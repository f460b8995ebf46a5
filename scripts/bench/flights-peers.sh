#!/usr/bin/env bash
# The flights job (examples/flights/job.yaml) against DuckDB and sqlite3 on
# the same machine, in one run, with the outputs compared value by value
# (docs/PERFORMANCE.md, "Flights against DuckDB and sqlite3").
#
#   scripts/bench.sh flights-peers [runs=3] [channels=4]
#
# Each round runs, in this order: streamd (--channels C), streamd with
# --source-parallelism / --output-workers when SOURCE_PARALLELISM or
# OUTPUT_WORKERS is set, DuckDB with DUCKDB_THREADS threads (default nproc),
# DuckDB with 1 thread, and sqlite3; `runs` rounds, so the engines
# alternate and share the machine's drift. For each: best and median wall
# time, median CPU time (user + system).
#
# What is timed: streamd, the whole process (start to exit: reading the
# Parquet file, writing the CSV file). DuckDB (perf/peers/duckdb), the one
# COPY statement that reads the Parquet file and writes the CSV file, as
# the peer measures it (wall clock and getrusage around the statement; its
# in-memory database is opened before, a few ms). sqlite3, the query alone
# on a table loaded beforehand (the load from a CSV export is not timed):
# the sqlite3 command if there is one (whole process), else Python's
# sqlite3 module (the query, timed inside), else skipped with a message.
#
# Then every engine's output (the last round's) is compared with streamd's,
# row by row and value by value (awk, no Python needed): same header, same
# rows in the same order (window_start, origin), window bounds, origin, city
# and state equal as text (NULL and empty are both written as an empty
# field), flights, delayed, max_delay and total_distance equal as numbers,
# avg_delay within a relative 1e-9. All engines divide an exact integer sum
# by the count in float64 and print the shortest round-trip decimal, so the
# averages are normally bit-identical; the tolerance is for the sqlite3
# command, which prints 15 significant digits (a relative error up to
# 5e-15), while an error of one record in a window moves the count. A
# difference prints the first rows that differ and fails the script (exit 1).
#
# Environment: STREAMD_DATA (default ../shared/data beside the repository);
# STREAMD_BIN and DUCKDB_PEER, prebuilt binaries (scripts/device.sh prep)
# instead of building them (Go with cgo and a C++ compiler, and the module
# proxy on the first build of the peer); DUCKDB_THREADS; SOURCE_PARALLELISM,
# OUTPUT_WORKERS; SQLITE_RUNS (sqlite3 rounds, default runs; 0 skips it);
# SQLITE_WITH=cli|python|none instead of the choice above.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
runs="${1:-3}"
channels="${2:-4}"
threads="${DUCKDB_THREADS:-$(nproc)}"
sqlite_runs="${SQLITE_RUNS:-$runs}"
data="${STREAMD_DATA:-$root/../shared/data}"
export STREAMD_DATA="$data"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

sd_bin="${STREAMD_BIN:-}"
if [ -z "$sd_bin" ]; then
  echo "building streamd ..." >&2
  sd_bin="$work/streamd"
  build_streamd "$sd_bin"
fi
duck="${DUCKDB_PEER:-}"
if [ -z "$duck" ]; then
  echo "building the DuckDB peer (cgo) ..." >&2
  duck="$work/duckdb-peer"
  go_build "$duck" "$root/perf/peers/duckdb" .
fi

# The streamd variants: name and extra flags.
variants=(default)
par_flags=()
[ -z "${SOURCE_PARALLELISM:-}" ] || par_flags+=(--source-parallelism "$SOURCE_PARALLELISM")
[ -z "${OUTPUT_WORKERS:-}" ] || par_flags+=(--output-workers "$OUTPUT_WORKERS")
[ ${#par_flags[@]} -eq 0 ] || variants+=(parallel)
flags_of() { if [ "$1" = parallel ]; then echo "${par_flags[*]}"; fi; }

# sqlite3: the command, else Python's module, else none. The table is
# loaded from a CSV export of the Parquet file (streamd's flights-to-csv job).
sqlite="${SQLITE_WITH:-}"
case "$sqlite" in "" | cli | python | none) ;; *) echo "SQLITE_WITH=$sqlite: expected cli, python or none" >&2; exit 2 ;; esac
[ "$sqlite_runs" -gt 0 ] || sqlite=none
if [ -z "$sqlite" ]; then
  sqlite=none
  if command -v sqlite3 >/dev/null; then sqlite=cli
  elif command -v python3 >/dev/null && python3 -c 'import sqlite3' 2>/dev/null; then sqlite=python
  else echo "sqlite3: no sqlite3 command and no python3 with its sqlite3 module; skipped" >&2; fi
fi
# The query of the earlier sqlite3 comparison (airports joined to every
# flight, an automatic index on airports.iata built inside the query), with
# streamd's columns; joining after the GROUP BY makes sqlite3 scan the
# airports once per window (a nested loop, minutes).
sql_query="SELECT substr(f.date, 1, 13) || ':00:00Z' AS window_start,
  strftime('%Y-%m-%dT%H:00:00Z', substr(f.date, 1, 13) || ':00:00', '+1 hour') AS window_end,
  f.origin, a.city, a.state, count(*) AS flights, sum(f.delay > 15) AS delayed,
  avg(f.delay) AS avg_delay, max(f.delay) AS max_delay, sum(f.distance) AS total_distance
FROM flights f LEFT JOIN airports a ON a.iata = f.origin
GROUP BY substr(f.date, 1, 13), f.origin
ORDER BY 1, 3;"
# py_sqlite MODE: load (CSV files into $work/f.db) or query (writes
# $work/sqlite.csv, prints "wall_s=W cpu_s=C" for the query alone).
py_sqlite() {
  python3 - "$1" "$work" "$data/airports.csv" "$sql_query" <<'PY'
import csv, resource, sqlite3, sys, time
mode, work, airports, query = sys.argv[1:]
db = sqlite3.connect(work + "/f.db")
if mode == "load":
    db.execute("CREATE TABLE flights(date TEXT, delay INTEGER, distance INTEGER, origin TEXT, destination TEXT)")
    with open(work + "/flights.csv", newline="") as f:
        r = csv.reader(f); next(r)
        db.executemany("INSERT INTO flights VALUES (?, ?, ?, ?, ?)",
                       ((d, int(x), int(y), o, t) for d, x, y, o, t in r))
    with open(airports, newline="") as f:
        r = csv.reader(f); cols = next(r)
        db.execute("CREATE TABLE airports(%s)" % ", ".join(c + " TEXT" for c in cols))
        db.executemany("INSERT INTO airports VALUES (%s)" % ", ".join("?" * len(cols)), r)
    db.commit()
    sys.exit(0)
def cpu():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime
c0, t0 = cpu(), time.perf_counter()
cur = db.execute(query)
with open(work + "/sqlite.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow([d[0] for d in cur.description])
    for row in cur:
        w.writerow(["" if v is None else repr(v) if isinstance(v, float) else v for v in row])
print("wall_s=%.3f cpu_s=%.3f" % (time.perf_counter() - t0, cpu() - c0))
PY
}
if [ "$sqlite" != none ]; then
  echo "loading sqlite3 ($sqlite) from a CSV export (not timed) ..." >&2
  STREAMD_OUT="$work" "$sd_bin" run "$root/scripts/jobs/flights-to-csv.yaml" --quiet
  if [ "$sqlite" = cli ]; then
    sqlite3 "$work/f.db" <<SQL
CREATE TABLE flights(date TEXT, delay INTEGER, distance INTEGER, origin TEXT, destination TEXT);
.mode csv
.import --skip 1 $work/flights.csv flights
.import $data/airports.csv airports
SQL
  else
    py_sqlite load
  fi
  rm -f "$work/flights.csv"
fi

# timed NAME CMD...: runs CMD under bash's time and appends "wall cpu" to
# $work/NAME.t: the process's own, or the wall_s/cpu_s the command prints.
timed() {
  local name="$1" t line
  shift
  t=$( { TIMEFORMAT='%R %U %S'; time "$@" >"$work/line" 2>"$work/err"; } 2>&1 ) || {
    echo "$name failed:" >&2; cat "$work/err" >&2; exit 1; }
  line=$(cat "$work/line")
  awk -v t="$t" -v l="$line" 'BEGIN {
    split(t, x, " "); w = x[1]; c = x[2] + x[3]
    n = split(l, f, /[ =]/); for (i = 1; i < n; i++) v[f[i]] = f[i+1]
    if ("wall_s" in v) { w = v["wall_s"]; c = v["cpu_s"] }
    printf "%.3f %.3f\n", w, c }' >>"$work/$name.t"
  echo "  $name: $(tail -1 "$work/$name.t" | awk '{ printf "%s s wall, %s s CPU", $1, $2 }')" >&2
}
sd_run() { # VARIANT
  mkdir -p "$work/sd-$1"
  # shellcheck disable=SC2046 # the flags are words
  STREAMD_OUT="$work/sd-$1" "$sd_bin" run "$root/examples/flights/job.yaml" --quiet --channels "$channels" $(flags_of "$1")
}
duck_run() { # THREADS
  "$duck" -flights "$data/flights-3m.parquet" -airports "$data/airports.csv" -out "$work/duckdb-$1.csv" -threads "$1"
}
sqlite_run() {
  if [ "$sqlite" = cli ]; then sqlite3 -header -csv "$work/f.db" "$sql_query" >"$work/sqlite.csv"; else py_sqlite query; fi
}

for i in $(seq "$runs"); do
  echo "round $i" >&2
  for v in "${variants[@]}"; do timed "streamd-$v" sd_run "$v"; done
  timed "duckdb-$threads" duck_run "$threads"
  [ "$threads" = 1 ] || timed duckdb-1 duck_run 1
  if [ "$sqlite" != none ] && [ "$i" -le "$sqlite_runs" ]; then timed sqlite sqlite_run; fi
done

# stats NAME: "best median cpu" (wall best and median, CPU median) of NAME's runs.
stats() {
  awk '{ print $1 }' "$work/$1.t" | sort -g >"$work/w"
  awk '{ print $2 }' "$work/$1.t" | sort -g >"$work/c"
  awk 'FNR == 1 { f++ } { v[f, FNR] = $1; n[f] = FNR }
    function med(f) { return n[f] % 2 ? v[f, (n[f] + 1) / 2] : (v[f, n[f] / 2] + v[f, n[f] / 2 + 1]) / 2 }
    END { printf "%.3f %.3f %.3f\n", v[1, 1], med(1), med(2) }' "$work/w" "$work/c"
}
rows=$(($(wc -l <"$work/sd-default/flights-hourly.csv") - 1))
echo "date: $(date -u +%Y-%m-%dT%H:%MZ); machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "job: examples/flights/job.yaml, 3 M flights -> $rows rows; $runs rounds (sqlite3: $([ "$sqlite" = none ] && echo skipped || echo "$sqlite_runs, $sqlite")); CPU = user + system"
printf '%-34s %10s %10s %10s\n' "" "best wall" "median" "CPU (med)"
declare -A best med cpu label
names=()
for v in "${variants[@]}"; do
  f=$(flags_of "$v")
  names+=("streamd-$v"); label[streamd-$v]="streamd --channels $channels${f:+ $f}"
done
names+=("duckdb-$threads"); label[duckdb-$threads]="DuckDB threads=$threads"
[ "$threads" = 1 ] || { names+=(duckdb-1); label[duckdb-1]="DuckDB threads=1"; }
[ "$sqlite" = none ] || { names+=(sqlite); label[sqlite]="sqlite3 ($sqlite, query only)"; }
for n in "${names[@]}"; do
  read -r best[$n] med[$n] cpu[$n] <<<"$(stats "$n")"
  printf '%-34s %8.3f s %8.3f s %8.3f s\n' "${label[$n]}" "${best[$n]}" "${med[$n]}" "${cpu[$n]}"
done
echo "ratios, peer / streamd (> 1: streamd faster or cheaper), best wall and median CPU:"
for v in "${variants[@]}"; do
  for n in "${names[@]}"; do
    case "$n" in streamd-*) continue ;; esac
    awk -v a="${label[streamd-$v]}" -v b="${label[$n]}" -v ws="${best[streamd-$v]}" -v wp="${best[$n]}" \
      -v cs="${cpu[streamd-$v]}" -v cp="${cpu[$n]}" \
      'BEGIN { printf "  %-30s vs %-30s wall %6.2fx  CPU %6.2fx\n", a, b, wp / ws, cp / cs }'
  done
done
echo "where streamd's CPU goes (one more run of each variant, untimed, with its report):"
for v in "${variants[@]}"; do
  echo "  ${label[streamd-$v]}:"
  # shellcheck disable=SC2046
  STREAMD_OUT="$work/sd-$v" "$sd_bin" run "$root/examples/flights/job.yaml" --channels "$channels" $(flags_of "$v") 2>&1 >/dev/null |
    sed -n '/^cpu:/,/^serial fraction/s/^/    /p'
done

# same A B NAME: compares CSV file B with streamd's A value by value; exit
# status 1 (and the first differences on stderr) if they differ.
same() {
  awk -v fa="$1" -v fb="$2" -v name="$3" '
  # split a CSV line into f (fields may be quoted, with "" for a quote)
  function csv(line, f,   n, i, c, q, s) {
    n = 1; s = ""; q = 0
    for (i = 1; i <= length(line); i++) {
      c = substr(line, i, 1)
      if (q) { if (c == "\"") { if (substr(line, i + 1, 1) == "\"") { s = s c; i++ } else q = 0 } else s = s c }
      else if (c == "\"") q = 1
      else if (c == ",") { f[n++] = s; s = "" }
      else s = s c
    }
    f[n] = s
    return n
  }
  function bad(msg) { if (++errs <= 5) printf "%s: row %d: %s\n", name, r, msg > "/dev/stderr" }
  function abs(x) { return x < 0 ? -x : x }
  BEGIN {
    text["window_start"] = text["window_end"] = text["origin"] = text["city"] = text["state"] = 1
    exact["flights"] = exact["delayed"] = exact["max_delay"] = exact["total_distance"] = 1
    close_["avg_delay"] = 1
    if ((getline la < fa) <= 0 || (getline lb < fb) <= 0) { print name ": empty output" > "/dev/stderr"; exit 1 }
    na = csv(la, h); nb = csv(lb, hb)
    if (la != lb) { printf "%s: header %s, streamd %s\n", name, lb, la > "/dev/stderr"; exit 1 }
    for (i = 1; i <= na; i++) if (!((h[i] in text) || (h[i] in exact) || (h[i] in close_))) {
      print name ": no rule for column " h[i] > "/dev/stderr"; exit 1 }
    r = 0; errs = 0; inexact = 0; maxrel = 0
    while ((getline la < fa) > 0) {
      r++
      if ((getline lb < fb) <= 0) { bad("missing (fewer rows than streamd)"); break }
      if (la == lb) continue
      if (csv(la, a) != na || csv(lb, b) != na) { bad("field count: " lb); continue }
      for (i = 1; i <= na; i++) {
        if (a[i] == b[i]) continue
        if ((h[i] in text)) bad(h[i] " " b[i] ", streamd " a[i])
        else if (a[i] == "" || b[i] == "") bad(h[i] " " b[i] ", streamd " a[i])
        else if ((h[i] in exact)) { if (a[i] + 0 != b[i] + 0) bad(h[i] " " b[i] ", streamd " a[i]) }
        else if (a[i] + 0 != b[i] + 0) {
          inexact++
          d = abs(a[i] - b[i]); m = abs(a[i]) > abs(b[i]) ? abs(a[i]) : abs(b[i])
          if (d / m > maxrel) maxrel = d / m
          if (d > 1e-9 * m) bad(h[i] " " b[i] ", streamd " a[i] " (relative " d / m ")")
        }
      }
    }
    if ((getline lb < fb) > 0) { r++; bad("extra rows (more rows than streamd)") }
    if (errs) { printf "%s: DIFFERS from streamd (%d differences)\n", name, errs > "/dev/stderr"; exit 1 }
    printf "  %-30s same as streamd: %d rows; keys, counts and sums exact; avg_delay: %d values not bit-identical (max relative %.1e)\n", name, r, inexact, maxrel
  }'
}
echo "outputs against streamd's (the last round's files):"
ok=0
ref="$work/sd-default/flights-hourly.csv"
[ "${#variants[@]}" -eq 1 ] || same "$ref" "$work/sd-parallel/flights-hourly.csv" "${label[streamd-parallel]}" || ok=1
same "$ref" "$work/duckdb-$threads.csv" "${label[duckdb-$threads]}" || ok=1
[ "$threads" = 1 ] || same "$ref" "$work/duckdb-1.csv" "${label[duckdb-1]}" || ok=1
[ "$sqlite" = none ] || same "$ref" "$work/sqlite.csv" "${label[sqlite]}" || ok=1
if [ "$ok" != 0 ]; then echo "FAIL: outputs differ (above)" >&2; exit 1; fi
