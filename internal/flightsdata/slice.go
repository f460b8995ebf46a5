// Package flightsdata cuts slices of the flights data
// (../shared/data/flights-3m.parquet) for the fast test tier: tests that
// need the data's real shapes (skewed origins, hourly windows, the file's
// schema and date order) but not its 3,000,000 rows read the first rows of
// it instead. The slices are cut when a test asks for one, into a
// temporary directory, so nothing derived from the data is committed; the
// tests that check the SQL reference read the full file.
package flightsdata

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/parquet-go/parquet-go"
)

// Slice writes the first rows rows of the Parquet file src (all of them
// if it has fewer) to a new Parquet file dst: the same schema, logical
// types included, ZSTD-compressed, in as many row groups as src has (rows
// split evenly), so that a reader crosses row-group boundaries as it does
// in the full file. It returns the number of rows written.
func Slice(src, dst string, rows int64) (n int64, err error) {
	if rows <= 0 {
		return 0, fmt.Errorf("slice %s: %d rows", src, rows)
	}
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return 0, err
	}
	pf, err := parquet.OpenFile(in, st.Size())
	if err != nil {
		return 0, fmt.Errorf("slice %s: %w", src, err)
	}
	rows = min(rows, pf.NumRows())
	groups := max(int64(len(pf.RowGroups())), 1)
	out, err := os.Create(dst)
	if err != nil {
		return 0, err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(dst)
		}
	}()
	w := parquet.NewWriter(out, pf.Schema(), parquet.Compression(&parquet.Zstd),
		parquet.MaxRowsPerRowGroup((rows+groups-1)/groups))
	r := parquet.NewReader(in, pf.Schema())
	defer r.Close()
	buf := make([]parquet.Row, 1024)
	for n < rows {
		k, rerr := r.ReadRows(buf[:min(int64(len(buf)), rows-n)])
		if _, err := w.WriteRows(buf[:k]); err != nil {
			return n, fmt.Errorf("slice %s: %w", dst, err)
		}
		n += int64(k)
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return n, fmt.Errorf("slice %s: %w", src, rerr)
		}
	}
	if err := w.Close(); err != nil {
		return n, fmt.Errorf("slice %s: %w", dst, err)
	}
	return n, nil
}
