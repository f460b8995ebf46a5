package jobfile

import (
	"path/filepath"

	"streamd/core"
	"streamd/core/sink"
)

// ParquetSinkSpec writes a Parquet file.
type ParquetSinkSpec struct {
	Path string `yaml:"path"`
	// Compression is the column chunks' codec: snappy (the default),
	// zstd, gzip, lz4 or none.
	Compression string `yaml:"compression"`
	// RowGroupSize is the number of rows per row group (0 or absent:
	// sink.DefaultRowGroupRows).
	RowGroupSize int64 `yaml:"row_group_size"`
	// Parts, if set, makes path a directory of that many Parquet part
	// files (sink.ParquetParts). (omitempty: the checkpoint description
	// of a sink without parts stays what it was before the option
	// existed.)
	Parts *int `yaml:"parts,omitempty"`
}

// parquet: {path, compression, row_group_size, parts} writes a Parquet
// file (sink.Parquet) or a directory of parts (sink.ParquetParts),
// creating its directory when the job starts. With
// checkpoints each epoch is a Parquet part and Close copies the parts'
// rows into the final file (exactly-once).
func init() {
	registerSink(sinkEntry[ParquetSinkSpec]{name: "parquet", rank: 25, build: buildParquetSink,
		output: func(c *ParquetSinkSpec) Output { return fileOutput(c.Path, c.Parts) },
		describe: func(p ParquetSinkSpec, resolve func(string) string) ParquetSinkSpec {
			p.Path = resolve(p.Path)
			if p.Compression == "" {
				p.Compression = "snappy"
			}
			if p.RowGroupSize == 0 {
				p.RowGroupSize = sink.DefaultRowGroupRows
			}
			return p
		}})
}

// maxRowGroupSize bounds parquet.row_group_size: a row group is held in
// memory until it is complete (about 100 bytes a row for a narrow
// output: 6 GB at the bound).
const maxRowGroupSize = 64 << 20

func buildParquetSink(b *sinkBuild, p *ParquetSinkSpec) (core.Sink, error) {
	if p.Path == "" {
		return nil, b.errAt("", "missing path")
	}
	if _, err := sink.ParquetCodec(p.Compression); err != nil {
		return nil, b.errAt(".compression", "%v", err)
	}
	if p.RowGroupSize < 0 || p.RowGroupSize > maxRowGroupSize {
		return nil, b.errAt(".row_group_size", "row_group_size must be between 1 and %d rows (0 or absent: %d), not %d", maxRowGroupSize, sink.DefaultRowGroupRows, p.RowGroupSize)
	}
	path := b.f.path(p.Path)
	opts := sink.ParquetOptions{Compression: p.Compression, RowGroupRows: p.RowGroupSize}
	if p.Parts != nil {
		n, err := b.parts(*p.Parts, path)
		if err != nil {
			return nil, err
		}
		return withMkdir(sink.ParquetParts(path, n, opts), filepath.Dir(path), "sink directory"), nil
	}
	if err := b.f.checkSinkPath(b.path+".path", path); err != nil {
		return nil, err
	}
	return withMkdir(sink.Parquet(path, opts), filepath.Dir(path), "sink directory"), nil
}
