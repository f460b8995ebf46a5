package jobfile

import (
	"streamd/core"
	"streamd/core/source"
)

// ParquetSpec reads a Parquet file.
type ParquetSpec struct {
	Path    string   `yaml:"path"`
	Columns []string `yaml:"columns"`

	in *inputs // the files path names, once built
}

// parquet: {path, columns} reads a Parquet file (source.Parquet).
func init() {
	registerSource(sourceEntry[ParquetSpec]{name: "parquet", rank: 10, replayable: true, build: buildParquet,
		describe: func(p ParquetSpec) any { return describeFiles(p, p.in) }})
}

func buildParquet(b *sourceBuild, p *ParquetSpec) (core.Source, error) {
	if p.Path == "" {
		return nil, b.errAt("", "missing path")
	}
	var err error
	if p.in, err = b.inputFiles(p.Path); err != nil {
		return nil, err
	}
	return p.in.open(b, func(path string) (core.Source, error) { return source.Parquet(path, p.Columns, b.errs) })
}
