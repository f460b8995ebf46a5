package jobfile

import (
	"path/filepath"

	"streamd/core"
	"streamd/core/sink"
)

// JSONLSinkSpec writes JSON lines, to a file or a directory of parts.
type JSONLSinkSpec struct {
	Path string `yaml:"path"`
	// Parts, if set, makes path a directory of that many part files
	// (sink.JSONLParts).
	// (omitempty: the checkpoint description of a sink without parts
	// stays what it was before the option existed.)
	Parts *int `yaml:"parts,omitempty"`
}

// jsonl: {path, parts} writes a JSON lines file (sink.JSONL) or a
// directory of parts (sink.JSONLParts), creating its directory when the
// job starts.
func init() {
	registerSink(sinkEntry[JSONLSinkSpec]{name: "jsonl", rank: 20, build: buildJSONLSink,
		output: func(c *JSONLSinkSpec) Output { return fileOutput(c.Path, c.Parts) },
		describe: func(j JSONLSinkSpec, resolve func(string) string) JSONLSinkSpec {
			j.Path = resolve(j.Path)
			return j
		}})
}

func buildJSONLSink(b *sinkBuild, j *JSONLSinkSpec) (core.Sink, error) {
	if j.Path == "" {
		return nil, b.errAt("", "missing path")
	}
	path := b.f.path(j.Path)
	if j.Parts != nil {
		n, err := b.parts(*j.Parts, path)
		if err != nil {
			return nil, err
		}
		return withMkdir(sink.JSONLParts(path, n), filepath.Dir(path), "sink directory"), nil
	}
	if err := b.f.checkSinkPath(b.path+".path", path); err != nil {
		return nil, err
	}
	return withMkdir(sink.JSONL(path), filepath.Dir(path), "sink directory"), nil
}
