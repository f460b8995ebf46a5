package jobfile

import (
	"path/filepath"

	"streamd/core"
	"streamd/core/sink"
)

// JSONLSinkSpec writes JSON lines.
type JSONLSinkSpec struct {
	Path string `yaml:"path"`
}

// jsonl: {path} writes a JSON lines file (sink.JSONL), creating its
// directory when the job starts.
func init() {
	registerSink(sinkEntry[JSONLSinkSpec]{name: "jsonl", rank: 20, build: buildJSONLSink,
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
	if err := b.f.checkSinkPath(b.path+".path", path); err != nil {
		return nil, err
	}
	return withMkdir(sink.JSONL(path), filepath.Dir(path), "sink directory"), nil
}
