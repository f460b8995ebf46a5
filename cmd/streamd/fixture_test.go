package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"streamd/internal/flightsdata"
	"streamd/internal/tier"
)

// flightsSliceRows is the size of the flights slice the fast tier's
// metamorphic and crash tests read: about 10 days of the 6 months, every
// busy origin, 11 row groups.
const flightsSliceRows = 500_000

// flightsFile returns the flights Parquet file the metamorphic and crash
// tests read: in the long tier the full 3 M rows in data, in the fast tier
// their first flightsSliceRows rows, cut into t's temporary directory.
// TestFlightsJobMatchesSQLite, the SQL reference, always reads the full
// file.
func flightsFile(t *testing.T, data string) string {
	t.Helper()
	full := filepath.Join(data, "flights-3m.parquet")
	if tier.Long() {
		return full
	}
	slice := filepath.Join(t.TempDir(), fmt.Sprintf("flights-%d.parquet", flightsSliceRows))
	if _, err := flightsdata.Slice(full, slice, flightsSliceRows); err != nil {
		t.Fatal(err)
	}
	return slice
}

// withFlightsFile points the flights job's text (examples/flights/job.yaml)
// at the flights file path.
func withFlightsFile(t *testing.T, job, path string) string {
	t.Helper()
	s := strings.Replace(job, "${STREAMD_DATA:-../../../shared/data}/flights-3m.parquet", path, 1)
	if s == job {
		t.Fatal("examples/flights/job.yaml names no ${STREAMD_DATA:-../../../shared/data}/flights-3m.parquet")
	}
	return s
}
