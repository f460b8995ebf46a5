package jobfile

import (
	"path/filepath"

	"streamd/core"
	"streamd/core/sink"
)

// CSVSinkSpec writes a CSV file, or a directory of parts.
type CSVSinkSpec struct {
	Path      string `yaml:"path"`
	Header    *bool  `yaml:"header"`
	Delimiter string `yaml:"delimiter"`
	// Parts, if set, makes path a directory of that many part files
	// (sink.CSVParts), each with the header.
	// (omitempty: the checkpoint description of a sink without parts
	// stays what it was before the option existed.)
	Parts *int `yaml:"parts,omitempty"`
}

// csv: {path, header, delimiter, parts} writes a CSV file (sink.CSV) or a
// directory of parts (sink.CSVParts), creating its directory when the job
// starts.
func init() {
	registerSink(sinkEntry[CSVSinkSpec]{name: "csv", rank: 10, build: buildCSVSink,
		output: func(c *CSVSinkSpec) Output { return fileOutput(c.Path, c.Parts) },
		describe: func(c CSVSinkSpec, resolve func(string) string) CSVSinkSpec {
			header := c.Header == nil || *c.Header
			c.Header, c.Path = &header, resolve(c.Path)
			if c.Delimiter == "" {
				c.Delimiter = ","
			}
			return c
		}})
}

func buildCSVSink(b *sinkBuild, c *CSVSinkSpec) (core.Sink, error) {
	if c.Path == "" {
		return nil, b.errAt("", "missing path")
	}
	opts := sink.CSVOptions{Header: c.Header == nil || *c.Header}
	if c.Delimiter != "" {
		r := []rune(c.Delimiter)
		if len(r) != 1 {
			return nil, b.errAt(".delimiter", "delimiter must be one character, not %q", c.Delimiter)
		}
		opts.Delimiter = r[0]
	}
	path := b.f.path(c.Path)
	if c.Parts != nil {
		n, err := b.parts(*c.Parts, path)
		if err != nil {
			return nil, err
		}
		return withMkdir(sink.CSVParts(path, n, opts), filepath.Dir(path), "sink directory"), nil
	}
	if err := b.f.checkSinkPath(b.path+".path", path); err != nil {
		return nil, err
	}
	return withMkdir(sink.CSV(path, opts), filepath.Dir(path), "sink directory"), nil
}
