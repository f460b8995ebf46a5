package jobfile

import (
	"strings"

	"github.com/goccy/go-yaml"

	"streamd/core"
	"streamd/core/source"
)

// StdinSpec reads standard input.
type StdinSpec struct {
	Format    string        `yaml:"format"` // csv | jsonl
	Header    *bool         `yaml:"header"`
	Delimiter string        `yaml:"delimiter"`
	Fields    yaml.MapSlice `yaml:"fields"` // name: type
	// TimeZone is the zone of timestamps without an offset, for fields
	// that give no time_zone: of their own ("" = UTC).
	TimeZone string `yaml:"time_zone,omitempty"`
}

// stdin: {format, header, delimiter, fields, time_zone} reads CSV or JSON lines from
// standard input (source.Stdin). It cannot be replayed, so a job that
// reads it takes no checkpoints.
func init() {
	registerSource(sourceEntry[StdinSpec]{name: "stdin", rank: 40, build: buildStdin})
}

func buildStdin(b *sourceBuild, in *StdinSpec) (core.Source, error) {
	switch in.Format {
	case "csv":
		opts, err := b.f.csvOptions(b.path, in.Header, in.Delimiter, in.Fields, in.TimeZone)
		if err != nil {
			return nil, err
		}
		so := source.StdinOptions{Header: opts.Header, Delimiter: opts.Delimiter, Columns: opts.Columns, Times: opts.Times}
		if b.validate {
			// validate must not read standard input: with fields the
			// columns are known; without, they are the header's (without
			// a header either, source.Stdin refuses it as run does).
			if len(opts.Columns) == 0 && opts.Header {
				return nil, b.errAt("", "validate cannot learn this source's columns without reading standard input (they are its header): give fields (name: type) to validate it")
			}
			so.Reader = strings.NewReader("")
			if len(opts.Columns) > 0 {
				so.Header = false
			}
		}
		s, err := source.Stdin("csv", so, b.errs)
		if err != nil {
			return nil, b.errAt("", "%v", err)
		}
		return s, nil
	case "jsonl":
		cs, err := b.f.columns(b.path+".fields", in.Fields, timeKeys...)
		if err != nil {
			return nil, err
		}
		fs := schemaFields(cs)
		times, err := b.f.timeFormats(cs, in.TimeZone, b.path+".time_zone")
		if err != nil {
			return nil, err
		}
		if len(fs) == 0 {
			return nil, b.errAt("", "missing fields (name: type)")
		}
		so := source.StdinOptions{Columns: fs, Times: times}
		if b.validate {
			so.Reader = strings.NewReader("") // validate reads nothing
		}
		s, err := source.Stdin("jsonl", so, b.errs)
		if err != nil {
			return nil, b.errAt("", "%v", err)
		}
		return s, nil
	}
	return nil, b.errAt(".format", "format %q: expected csv or jsonl", in.Format)
}
