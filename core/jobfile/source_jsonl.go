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

	in *inputs // the files path names, once built
}

// jsonl: {path, fields, compression} reads a JSON lines file (source.JSONL).
func init() {
	registerSource(sourceEntry[JSONLSpec]{name: "jsonl", rank: 30, replayable: true, build: buildJSONLSource,
		describe: func(j JSONLSpec) any { return describeFiles(j, j.in) }})
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
	if j.in, err = b.inputFiles(j.Path); err != nil {
		return nil, err
	}
	return j.in.open(b, func(p string) (core.Source, error) { return source.JSONLOf(p, fs, c, b.errs) })
}
