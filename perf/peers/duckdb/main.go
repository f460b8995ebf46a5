// Command duckdb-peer runs the flights job (examples/flights/job.yaml) as one
// DuckDB statement, for scripts/bench.sh flights-peers: the Parquet file →
// hourly windows per origin (count, count_if(delay > 15), avg, max, sum) →
// a LEFT JOIN of airports.csv for city and state → a CSV file ordered by
// window_start, origin, with streamd's header and timestamp format
// (RFC 3339 in UTC, "2001-01-01T00:00:00Z").
//
//	duckdb-peer -flights F.parquet -airports airports.csv -out out.csv [-threads N]
//
// The database is in memory. Opening it, the first connection and the
// settings are not timed; the clock and the CPU counter (getrusage of the
// whole process: every DuckDB thread, user + system) start just before the
// COPY statement and stop when it returns, so the output file is complete
// and closed.
//
// Output, one line on standard output:
//
//	duckdb threads=N rows=R wall_s=W cpu_s=C user_s=U sys_s=S
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"
)

func main() {
	flights := flag.String("flights", "", "the flights Parquet file")
	airports := flag.String("airports", "", "airports.csv (iata,name,city,state,…)")
	out := flag.String("out", "", "the output CSV file")
	threads := flag.Int("threads", runtime.NumCPU(), "DuckDB's threads setting")
	flag.Parse()
	if *flights == "" || *airports == "" || *out == "" || *threads < 1 {
		fmt.Fprintln(os.Stderr, "usage: duckdb-peer -flights F.parquet -airports airports.csv -out out.csv [-threads N ≥ 1]")
		os.Exit(2)
	}
	if err := run(*flights, *airports, *out, *threads); err != nil {
		fmt.Fprintln(os.Stderr, "duckdb-peer:", err)
		os.Exit(1)
	}
}

func run(flights, airports, out string, threads int) error {
	ctx := context.Background()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return fmt.Errorf("open an in-memory database: %w", err)
	}
	defer db.Close()
	// One connection: the settings below and the query share it.
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	for _, s := range []string{
		fmt.Sprintf("SET threads = %d", threads),
		"SET TimeZone = 'UTC'",
		// A first query, so that lazy start-up work is not timed.
		"SELECT 1",
	} {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}

	q := copyStatement(flights, airports, out)
	u0, s0, err := cpu()
	if err != nil {
		return err
	}
	start := time.Now()
	res, err := conn.ExecContext(ctx, q)
	wall := time.Since(start)
	if err != nil {
		return fmt.Errorf("the flights query: %w", err)
	}
	u1, s1, err := cpu()
	if err != nil {
		return err
	}
	rows, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("rows written: %w", err)
	}
	user, sys := u1-u0, s1-s0
	fmt.Printf("duckdb threads=%d rows=%d wall_s=%.3f cpu_s=%.3f user_s=%.3f sys_s=%.3f\n",
		threads, rows, wall.Seconds(), (user + sys).Seconds(), user.Seconds(), sys.Seconds())
	return nil
}

// copyStatement is the job in SQL. Windows are [hour, hour + 1 h) in UTC,
// as streamd's 1h tumbling window over the date field; count(*) counts
// records (streamd's count), count_if and avg skip NULL delays as streamd's
// aggregates skip missing values. The airports' fields are read as text so
// that codes such as "00M" stay as written.
func copyStatement(flights, airports, out string) string {
	return fmt.Sprintf(`COPY (
  SELECT strftime(w.hour, '%%Y-%%m-%%dT%%H:%%M:%%SZ') AS window_start,
         strftime(w.hour + INTERVAL 1 HOUR, '%%Y-%%m-%%dT%%H:%%M:%%SZ') AS window_end,
         w.origin, a.city, a.state,
         w.flights, w.delayed, w.avg_delay, w.max_delay, w.total_distance
  FROM (
    SELECT date_trunc('hour', date) AS hour, origin,
           count(*) AS flights, count_if(delay > 15) AS delayed,
           avg(delay) AS avg_delay, max(delay) AS max_delay,
           sum(distance) AS total_distance
    FROM read_parquet(%s)
    GROUP BY hour, origin
  ) w
  LEFT JOIN read_csv(%s, header = true, all_varchar = true) a ON a.iata = w.origin
  ORDER BY w.hour, w.origin
) TO %s (FORMAT csv, HEADER)`, literal(flights), literal(airports), literal(out))
}

// literal quotes s as an SQL string literal.
func literal(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// cpu returns the process's user and system CPU time so far.
func cpu() (user, sys time.Duration, err error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano()), nil
}
