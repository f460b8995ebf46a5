package jobfile

import (
	"strings"

	"github.com/goccy/go-yaml"

	"streamd/core"
	"streamd/core/source"
)

// StdinSpec reads standard input.
type StdinSpec struct {
	Format    string        `yaml:"format"`  // csv | jsonl | json
	Explode   string        `yaml:"explode"` // jsonl, json: a path to an array of records
	Header    *bool         `yaml:"header"`
	Delimiter string        `yaml:"delimiter"`
	Fields    yaml.MapSlice `yaml:"fields"` // name: type
	// TimeZone is the zone of timestamps without an offset, for fields
	// that give no time_zone: of their own ("" = UTC).
	TimeZone string `yaml:"time_zone,omitempty"`
	// Compression: auto (default: by the first bytes), none, gzip, zstd,
	// bzip2 or xz.
	Compression string `yaml:"compression"`
	// MaxQuotedLines, MaxQuotedBytes: csv only, as the csv source's.
	MaxQuotedLines int   `yaml:"max_quoted_lines,omitempty"`
	MaxQuotedBytes int64 `yaml:"max_quoted_bytes,omitempty"`
}

// stdin: {format, header, delimiter, explode, fields, compression,
// max_quoted_lines, max_quoted_bytes} reads
// CSV, JSON lines or JSON (an array or a stream of values) from
// standard input (source.Stdin). It cannot be replayed, so a job that
// reads it takes no checkpoints.
func init() {
	registerSource(sourceEntry[StdinSpec]{name: "stdin", rank: 40, build: buildStdin,
		weak: func(*StdinSpec) (string, string) {
			return "", "standard input is a live input: its batches end where reads end, so where watermarks advance, and which out-of-order records are late, can differ between runs"
		}})
}

func buildStdin(b *sourceBuild, in *StdinSpec) (core.Source, error) {
	comp, err := b.compression(in.Compression)
	if err != nil {
		return nil, err
	}
	switch in.Format {
	case "csv":
		opts, err := b.f.csvOptions(b.path, in.Header, in.Delimiter, in.Fields, in.TimeZone)
		if err != nil {
			return nil, err
		}
		so := source.StdinOptions{Header: opts.Header, Delimiter: opts.Delimiter, Columns: opts.Columns, Times: opts.Times, Compression: comp}
		if so.MaxQuotedLines, so.MaxQuotedBytes, err = b.quotedLimits(in.MaxQuotedLines, in.MaxQuotedBytes); err != nil {
			return nil, err
		}
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
	case "jsonl", "json":
		format := "lines"
		if in.Format == "json" {
			format = "auto" // an array or a stream of values, by the first byte
		}
		jo, err := b.jsonOptions("stdin", format, in.Explode, in.Fields, in.TimeZone)
		if err != nil {
			return nil, err
		}
		so := source.StdinOptions{JSON: &jo, Compression: comp}
		if b.validate {
			so.Reader = strings.NewReader("") // validate reads nothing
		}
		s, err := source.Stdin(in.Format, so, b.errs)
		if err != nil {
			return nil, b.errAt("", "%v", err)
		}
		return s, nil
	}
	return nil, b.errAt(".format", "format %q: expected csv, jsonl or json", in.Format)
}
