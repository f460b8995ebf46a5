package jobfile

import (
	"streamd/core"
	"streamd/core/source"
)

// ParquetSpec reads a Parquet file.
type ParquetSpec struct {
	Path    string   `yaml:"path"`
	Columns []string `yaml:"columns"`
}

// parquet: {path, columns} reads a Parquet file (source.Parquet).
func init() {
	registerSource(sourceEntry[ParquetSpec]{name: "parquet", rank: 10, replayable: true, build: buildParquet})
}

func buildParquet(b *sourceBuild, p *ParquetSpec) (core.Source, error) {
	if p.Path == "" {
		return nil, b.errAt("", "missing path")
	}
	b.f.claimFile(b.path+".path", b.f.path(p.Path), "the input file")
	s, err := source.Parquet(b.f.path(p.Path), p.Columns, b.errs)
	if err != nil {
		return nil, b.errAt(".path", "%v", err)
	}
	return s, nil
}
