package jobfile

import (
	"os"

	"streamd/core"
	"streamd/core/sink"
)

// StdoutSpec writes to standard output.
type StdoutSpec struct {
	Format string `yaml:"format"` // csv | jsonl
}

// stdout: {format} writes CSV (the default) or JSON lines to standard
// output, or to Options.Stdout (sink.Stdout).
func init() {
	registerSink(sinkEntry[StdoutSpec]{name: "stdout", rank: 30, build: buildStdout,
		describe: func(s StdoutSpec, _ func(string) string) StdoutSpec {
			if s.Format == "" {
				s.Format = "csv"
			}
			return s
		}})
}

func buildStdout(b *sinkBuild, s *StdoutSpec) (core.Sink, error) {
	format := s.Format
	if format == "" {
		format = "csv"
	}
	if format != "csv" && format != "jsonl" {
		return nil, b.errAt(".format", "format %q: expected csv or jsonl", format)
	}
	w := b.opt.Stdout
	if w == nil {
		w = os.Stdout
	}
	sk, err := sink.Stdout(format, w, sink.CSVOptions{Header: true})
	if err != nil {
		return nil, b.errAt("", "%v", err)
	}
	return sk, nil
}
