package jobfile

import (
	"github.com/goccy/go-yaml"

	"streamd/core"
	"streamd/core/source"
)

// JSONLSpec reads JSON lines.
type JSONLSpec struct {
	Path   string        `yaml:"path"`
	Fields yaml.MapSlice `yaml:"fields"` // name: type
	// Compression: as CSVSpec.Compression.
	Compression string `yaml:"compression"`
}

// jsonl: {path, fields, compression} reads a JSON lines file (source.JSONL).
func init() {
	registerSource(sourceEntry[JSONLSpec]{name: "jsonl", rank: 30, replayable: true, build: buildJSONLSource})
}

func buildJSONLSource(b *sourceBuild, j *JSONLSpec) (core.Source, error) {
	if j.Path == "" {
		return nil, b.errAt("", "missing path")
	}
	fs, err := b.f.fields(b.path+".fields", j.Fields)
	if err != nil {
		return nil, err
	}
	if len(fs) == 0 {
		return nil, b.errAt("", "missing fields (name: type)")
	}
	c, err := b.compression(j.Compression)
	if err != nil {
		return nil, err
	}
	b.f.claimFile(b.path+".path", b.f.path(j.Path), "the input file")
	s, err := source.JSONLOf(b.f.path(j.Path), fs, c, b.errs)
	if err != nil {
		return nil, b.errAt(".path", "%v", err)
	}
	return s, nil
}
