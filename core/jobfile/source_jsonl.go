package jobfile

import (
	"io"

	"github.com/goccy/go-yaml"

	"streamd/core"
	"streamd/core/source"
)

// JSONLSpec reads JSON lines.
type JSONLSpec struct {
	Path    string        `yaml:"path"`
	Explode string        `yaml:"explode"` // a path to an array of records in each line
	Fields  yaml.MapSlice `yaml:"fields"`  // name: type, or name: {type, path}
	// TimeZone is the zone of timestamps without an offset, for fields
	// that give no time_zone: of their own ("" = UTC).
	TimeZone string `yaml:"time_zone,omitempty"`
	// Compression: as CSVSpec.Compression.
	Compression string `yaml:"compression"`
	// Follow, Watch, Poll, IdleTimeout: a live input (LiveSpec).
	Follow      bool   `yaml:"follow"`
	Watch       bool   `yaml:"watch"`
	Poll        string `yaml:"poll"`
	IdleTimeout string `yaml:"idle_timeout"`

	in *inputs // the files path names, once built
}

// JSONSpec reads JSON: lines, a top-level array or a stream of values.
type JSONSpec struct {
	Path    string        `yaml:"path"`
	Format  string        `yaml:"format"` // auto (default) | lines | array | values
	Explode string        `yaml:"explode"`
	Fields  yaml.MapSlice `yaml:"fields"`
	// TimeZone: as JSONLSpec.TimeZone.
	TimeZone string `yaml:"time_zone,omitempty"`
	// Compression: as CSVSpec.Compression.
	Compression string `yaml:"compression"`
	// Follow, Watch, Poll, IdleTimeout: a live input (LiveSpec).
	Follow      bool   `yaml:"follow"`
	Watch       bool   `yaml:"watch"`
	Poll        string `yaml:"poll"`
	IdleTimeout string `yaml:"idle_timeout"`

	in *inputs // the files path names, once built
}

// jsonl: {path, explode, fields, time_zone, compression} reads JSON lines
// files (source.JSONL); json: {path, format, explode, fields, time_zone,
// compression} reads
// any of the JSON formats (source.JSON).
func init() {
	registerSource(sourceEntry[JSONLSpec]{name: "jsonl", rank: 30, replayable: true, build: buildJSONLSource,
		weak: func(j *JSONLSpec) (string, string) {
			return weakLive(LiveSpec{Follow: j.Follow, Watch: j.Watch, Poll: j.Poll, IdleTimeout: j.IdleTimeout})
		},
		describe: func(j JSONLSpec) any {
			j.Poll, j.IdleTimeout = "", "" // a restored run may poll otherwise
			return describeFiles(j, j.in)
		}})
	registerSource(sourceEntry[JSONSpec]{name: "json", rank: 31, replayable: true, build: buildJSONSource,
		weak: func(j *JSONSpec) (string, string) { return weakLive(j.live()) },
		describe: func(j JSONSpec) any {
			j.Poll, j.IdleTimeout = "", ""
			return describeFiles(j, j.in)
		}})
}

func buildJSONLSource(b *sourceBuild, j *JSONLSpec) (core.Source, error) {
	spec := &JSONSpec{Path: j.Path, Format: "lines", Explode: j.Explode, Fields: j.Fields, TimeZone: j.TimeZone, Compression: j.Compression,
		Follow: j.Follow, Watch: j.Watch, Poll: j.Poll, IdleTimeout: j.IdleTimeout}
	s, err := buildJSON(b, spec)
	j.in = spec.in
	return s, err
}

func buildJSONSource(b *sourceBuild, j *JSONSpec) (core.Source, error) {
	return buildJSON(b, j)
}

func buildJSON(b *sourceBuild, j *JSONSpec) (core.Source, error) {
	if j.Path == "" {
		return nil, b.errAt("", "missing path")
	}
	opts, err := b.jsonOptions(b.f.path(j.Path), j.Format, j.Explode, j.Fields, j.TimeZone)
	if err != nil {
		return nil, err
	}
	lo, live, err := b.live(j.live(), j.Path, j.Compression, 0)
	if err != nil {
		return nil, err
	}
	if live {
		if lo.Follow && opts.Format != source.JSONLines {
			if j.Format == "" || j.Format == "auto" {
				opts.Format = source.JSONLines // a followed file grows by lines
			} else {
				return nil, b.errAt(".format", "follow reads JSON lines as they arrive: format %s cannot be followed (use format: lines, or watch: true alone for complete files)", j.Format)
			}
		}
		kind := "json"
		if j.Format == "lines" {
			kind = "jsonl"
		}
		return b.liveSource(source.LiveJSON(kind, b.f.path(j.Path), opts, lo, b.errs))
	}
	if opts.Compression, err = b.compression(j.Compression); err != nil {
		return nil, err
	}
	var in *inputs
	if in, err = b.inputFiles(j.Path); err != nil {
		return nil, err
	}
	j.in = in
	return in.open(b, func(p string) (core.Source, error) { return source.JSON(p, opts, nil, b.errs) })
}

// jsonOptions checks a JSON source's format, explode and fields (with
// their paths) and returns them as source.JSONOptions. Errors name the
// key at fault.
func (b *sourceBuild) jsonOptions(input, format, explode string, fields yaml.MapSlice, zone string) (source.JSONOptions, error) {
	var o source.JSONOptions
	var err error
	if o.Format, err = source.ParseJSONFormat(format); err != nil {
		return o, b.errAt(".format", "%v", err)
	}
	if explode != "" {
		if _, err := source.ParseJSONPath(explode); err != nil {
			return o, b.errAt(".explode", "explode: %v", err)
		}
		o.Explode = explode
	}
	cs, err := b.f.columns(b.path+".fields", fields, append(append([]string{"path"}, nullKeys...), timeKeys...)...)
	if err != nil {
		return o, err
	}
	if o.Times, err = b.f.timeFormats(cs, zone, b.path+".time_zone"); err != nil {
		return o, err
	}
	if len(cs) == 0 {
		return o, b.errAt("", "missing fields (name: type, or name: {type: …, path: …})")
	}
	for _, c := range cs {
		if c.Path != "" {
			p, err := source.ParseJSONPath(c.Path)
			if err != nil {
				return o, b.f.errAt(c.At+".path", "%v", err)
			}
			if p.Rooted && explode == "" && len(p.String()) == 1 {
				return o, b.f.errAt(c.At+".path", "path $ is the whole record: a field needs a value inside it")
			}
		}
		o.Fields = append(o.Fields, source.JSONField{Field: c.Field, Path: c.Path})
		// The paths so far together: two fields at one path, a field
		// inside another's value, a path into the exploded array.
		chk := o
		chk.Compression = source.CompressionNone // the empty input is not compressed whatever its name
		if _, err := source.JSON(input, chk, emptyReader{}, nil); err != nil {
			at := c.At
			if c.Path != "" {
				at += ".path"
			}
			return o, b.f.errAt(at, "%v", err)
		}
	}
	return o, nil
}

// emptyReader is an input with nothing in it, for checking options.
type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, io.EOF }

func (j *JSONSpec) live() LiveSpec {
	return LiveSpec{Follow: j.Follow, Watch: j.Watch, Poll: j.Poll, IdleTimeout: j.IdleTimeout}
}
