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
	// TimeZone is the zone of timestamps without an offset, for fields
	// that give no time_zone: of their own ("" = UTC).
	TimeZone string `yaml:"time_zone,omitempty"`
}

// jsonl: {path, fields, time_zone} reads a JSON lines file (source.JSONL).
func init() {
	registerSource(sourceEntry[JSONLSpec]{name: "jsonl", rank: 30, replayable: true, build: buildJSONLSource})
}

func buildJSONLSource(b *sourceBuild, j *JSONLSpec) (core.Source, error) {
	if j.Path == "" {
		return nil, b.errAt("", "missing path")
	}
	cs, err := b.f.columns(b.path+".fields", j.Fields, timeKeys...)
	if err != nil {
		return nil, err
	}
	fs := schemaFields(cs)
	times, err := b.f.timeFormats(cs, j.TimeZone, b.path+".time_zone")
	if err != nil {
		return nil, err
	}
	if len(fs) == 0 {
		return nil, b.errAt("", "missing fields (name: type)")
	}
	b.f.claimFile(b.path+".path", b.f.path(j.Path), "the input file")
	s, err := source.JSONL(b.f.path(j.Path), fs, times, nil, b.errs)
	if err != nil {
		return nil, b.errAt(".path", "%v", err)
	}
	return s, nil
}
