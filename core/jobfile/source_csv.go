package jobfile

import (
	"github.com/goccy/go-yaml"

	"streamd/core"
	"streamd/core/source"
)

// CSVSpec reads a CSV file.
type CSVSpec struct {
	Path      string        `yaml:"path"`
	Header    *bool         `yaml:"header"`
	Delimiter string        `yaml:"delimiter"`
	Columns   yaml.MapSlice `yaml:"columns"` // name: type, in file order
	// TimeZone is the zone of timestamps without an offset, for columns
	// that give no time_zone: of their own ("" = UTC).
	TimeZone string `yaml:"time_zone,omitempty"`
	// Parallelism is the number of goroutines parsing the file: 0 (the
	// default) is auto, 1 the sequential reader (source.CSVOptions).
	Parallelism int `yaml:"parallelism"`
	// Compression: auto (default: by extension, then magic bytes), none,
	// gzip, zstd, bzip2 or xz (source.Compression).
	Compression string `yaml:"compression"`
	// Follow, Watch, Poll, IdleTimeout: a live input (LiveSpec).
	Follow      bool   `yaml:"follow"`
	Watch       bool   `yaml:"watch"`
	Poll        string `yaml:"poll"`
	IdleTimeout string `yaml:"idle_timeout"`
	// MaxQuotedLines and MaxQuotedBytes bound a quoted field that spans
	// line ends (source.CSVOptions): 0 (the default) is 10,000 lines and
	// 1 MiB.
	MaxQuotedLines int   `yaml:"max_quoted_lines,omitempty"`
	MaxQuotedBytes int64 `yaml:"max_quoted_bytes,omitempty"`

	in *inputs // the files path names, once built
}

// csv: {path, header, delimiter, columns, time_zone, parallelism,
// compression, max_quoted_lines, max_quoted_bytes}
// reads CSV files
// (source.CSV). A restored run may parse it with another parallelism.
func init() {
	registerSource(sourceEntry[CSVSpec]{name: "csv", rank: 20, replayable: true, build: buildCSVSource,
		weak: func(c *CSVSpec) (string, string) { return weakLive(c.live()) },
		describe: func(c CSVSpec) any {
			c.Parallelism = 0
			c.Poll, c.IdleTimeout = "", "" // a restored run may poll otherwise
			return describeFiles(c, c.in)
		}})
}

func buildCSVSource(b *sourceBuild, c *CSVSpec) (core.Source, error) {
	if c.Path == "" {
		return nil, b.errAt("", "missing path")
	}
	opts, err := b.f.csvOptions(b.path, c.Header, c.Delimiter, c.Columns, c.TimeZone)
	if err != nil {
		return nil, err
	}
	if c.Parallelism < 0 || c.Parallelism > maxCSVParallelism {
		return nil, b.errAt(".parallelism", "parallelism must be between 0 (auto) and %d, not %d", maxCSVParallelism, c.Parallelism)
	}
	opts.Parallelism = c.Parallelism
	if opts.MaxQuotedLines, opts.MaxQuotedBytes, err = b.quotedLimits(c.MaxQuotedLines, c.MaxQuotedBytes); err != nil {
		return nil, err
	}
	lo, live, err := b.live(c.live(), c.Path, c.Compression, c.Parallelism)
	if err != nil {
		return nil, err
	}
	if live {
		return b.liveSource(source.LiveCSV(b.f.path(c.Path), opts, lo, b.errs))
	}
	if opts.Compression, err = b.compression(c.Compression); err != nil {
		return nil, err
	}
	if c.in, err = b.inputFiles(c.Path); err != nil {
		return nil, err
	}
	return c.in.open(b, func(p string) (core.Source, error) { return source.CSV(p, opts, b.errs) })
}

// compression parses a text source's compression: key.
func (b *sourceBuild) compression(s string) (source.Compression, error) {
	c, err := source.ParseCompression(s)
	if err != nil {
		return "", b.errAt(".compression", "%v", err)
	}
	return c, nil
}

// quotedLimits checks a CSV source's max_quoted_lines and
// max_quoted_bytes: 0 (the default) or more.
func (b *sourceBuild) quotedLimits(lines int, bytes int64) (int, int64, error) {
	if lines < 0 {
		return 0, 0, b.errAt(".max_quoted_lines", "max_quoted_lines must be 0 (the default, %d) or more, not %d", source.DefaultMaxQuotedLines, lines)
	}
	if bytes < 0 {
		return 0, 0, b.errAt(".max_quoted_bytes", "max_quoted_bytes must be 0 (the default, %d) or more, not %d", source.DefaultMaxQuotedBytes, bytes)
	}
	return lines, bytes, nil
}

// maxCSVParallelism bounds source.csv.parallelism: each parsing goroutine
// keeps about two blocks of 256 KiB and their parsed records in flight
// (1000 goroutines took 520 MB), and more goroutines than cores gain
// nothing.
const maxCSVParallelism = 256

// csvOptions reads the CSV settings of the csv and stdin sources; zone
// is the source's time_zone:.
func (f *File) csvOptions(path string, header *bool, delim string, cols yaml.MapSlice, zone string) (source.CSVOptions, error) {
	opts := source.CSVOptions{Header: header == nil || *header}
	if delim != "" {
		r := []rune(delim)
		if len(r) != 1 {
			return opts, f.errAt(path+".delimiter", "delimiter must be one character, not %q", delim)
		}
		opts.Delimiter = r[0]
	}
	cs, err := f.columns(path+".columns", cols, append(append([]string(nil), timeKeys...), nullKeys...)...)
	if err != nil {
		return opts, err
	}
	opts.Columns = schemaFields(cs)
	if opts.Times, err = f.timeFormats(cs, zone, path+".time_zone"); err != nil {
		return opts, err
	}
	return opts, nil
}

func (c *CSVSpec) live() LiveSpec {
	return LiveSpec{Follow: c.Follow, Watch: c.Watch, Poll: c.Poll, IdleTimeout: c.IdleTimeout}
}
