package jobfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	goruntime "runtime"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"streamd/core"
	"streamd/core/eval"
	"streamd/core/ops"
	"streamd/core/runtime"
	"streamd/core/sink"
	"streamd/core/source"
	"streamd/core/window"
	"streamd/elastic"
	"streamd/kvstate"
	"streamd/snapshot"
)

// Options override parts of the file at build time.
type Options struct {
	// Channels, if > 0, replaces region.channels (streamd run and bench
	// --channels). A job without a region, or a value out of range (0 is
	// "not set"; negative is out of range), is an error that names
	// --channels, not a position in the file.
	Channels int
	// SourceParallelism, if > 0, replaces source.parallelism (streamd run
	// --source-parallelism); negative is out of range.
	SourceParallelism int
	// OutputWorkers, if > 0, replaces runtime.output_workers (streamd run
	// --output-workers); negative is out of range.
	OutputWorkers int
	// Stdout is where a stdout sink writes (default os.Stdout).
	Stdout *os.File
	// ElasticLog, if set, receives the elastic controller's timeline (CSV).
	ElasticLog io.Writer
	// Restore is "" (start fresh), "latest" (the newest valid checkpoint
	// in checkpoint.dir) or a checkpoint directory.
	Restore string
	// Validate builds without side effects on disk: checkpoint.dir is
	// only read (not created, not cleaned up), and checkpoints of an
	// unfinished run in it are mentioned through Warn, not refused.
	Validate bool
	// Warn receives warnings (a corrupt checkpoint skipped on restore)
	// and, under Validate, notes (checkpoints of an unfinished run).
	Warn func(msg string)
	// Info, if set, receives notes that are not warnings (which checkpoint
	// a restore resumes from); `streamd run --quiet` leaves it nil.
	Info func(msg string)
}

// Build opens the source, compiles every expression, loads lookup tables
// and binds every operator to its input schema. Errors name their position
// in the file. The caller runs the job with runtime.Run, which closes the
// source and the sink.
func (f *File) Build(opt Options) (*runtime.Job, error) {
	s := &f.Spec
	mode, err := core.ParseErrorMode(s.OnError)
	if err != nil {
		return nil, f.errAt("on_error", "%v", err)
	}
	errs, err := core.NewErrorPolicy(mode, f.path(s.DeadLetterPath))
	if err != nil {
		return nil, f.errAt("on_error", "%s", strings.TrimPrefix(err.Error(), "on_error: "))
	}
	if s.DeadLetterPath != "" {
		if err := f.checkDeadLetterPath("dead_letter_path", f.path(s.DeadLetterPath)); err != nil {
			return nil, err
		}
	}
	job := &runtime.Job{Name: s.Name, Errors: errs, RingSize: s.Runtime.RingSize}
	if job.Name == "" {
		job.Name = strings.TrimSuffix(baseName(f.Path), ".yaml")
	}
	if rs := s.Runtime.RingSize; rs < 0 || rs == 1 || rs&(rs-1) != 0 {
		return nil, f.errAt("runtime.ring_size", "ring size must be a power of two ≥ 2, not %d", rs)
	}
	if job.Source, err = f.buildSource(errs); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			job.Source.Close()
		}
	}()
	schema := job.Source.Schema()
	if et := s.EventTime; et != nil {
		if job.EventTime, err = f.buildEventTime(et, schema); err != nil {
			return nil, err
		}
	}
	if job.Pre, schema, err = f.buildOps("pipeline", s.Pipeline, schema, errs, nil); err != nil {
		return nil, err
	}
	if job.SourceParallelism, err = f.workers("source.parallelism", "--source-parallelism", f.Spec.Source.Parallelism, opt.SourceParallelism); err != nil {
		return nil, err
	}
	if job.OutputParallelism, err = f.workers("runtime.output_workers", "--output-workers", f.Spec.Runtime.OutputWorkers, opt.OutputWorkers); err != nil {
		return nil, err
	}
	if opt.Channels != 0 && s.Region == nil {
		return nil, fmt.Errorf("--channels %d: %s has no parallel region (region:) whose channels it could set", opt.Channels, f.Path)
	}
	if opt.Channels < 0 || opt.Channels > maxChannels {
		return nil, fmt.Errorf("--channels %d: channels must be between 1 and %d", opt.Channels, maxChannels)
	}
	if r := s.Region; r != nil {
		reg := &runtime.Region{Channels: 1, Key: r.KeyBy, Groups: r.KeyGroups}
		if r.Channels != nil {
			reg.Channels = *r.Channels
			if reg.Channels < 1 || reg.Channels > maxChannels {
				return nil, f.errAt("region.channels", "channels must be between 1 and %d, not %d", maxChannels, reg.Channels)
			}
		}
		if opt.Channels > 0 {
			reg.Channels = opt.Channels
		}
		if reg.Groups == 0 {
			reg.Groups = kvstate.DefaultGroups
		}
		if err := kvstate.CheckGroups(reg.Groups); err != nil {
			return nil, f.errAt("region.key_groups", "%v", err)
		}
		if reg.Channels > reg.Groups && len(reg.Key) > 0 {
			if opt.Channels > 0 {
				return nil, fmt.Errorf("--channels %d: more channels than the region's %d key groups (region.key_groups)", reg.Channels, reg.Groups)
			}
			return nil, f.errAt("region.channels", "%d channels but only %d key groups", reg.Channels, reg.Groups)
		}
		for i, k := range r.KeyBy {
			if _, err := schema.Lookup(k); err != nil {
				return nil, f.errAt(fmt.Sprintf("region.key_by[%d]", i), "%v", err)
			}
		}
		reg.Unordered = r.Ordered != nil && !*r.Ordered
		if len(r.Ops) == 0 {
			return nil, f.errAt("region", "a region needs ops")
		}
		if err := f.buildElastic(r.Elastic, reg, opt); err != nil {
			return nil, err
		}
		if reg.Ops, schema, err = f.buildOps("region.ops", r.Ops, schema, errs, reg); err != nil {
			return nil, err
		}
		job.Region = reg
	}
	if job.Post, _, err = f.buildOps("post", s.Post, schema, errs, nil); err != nil {
		return nil, err
	}
	if job.Sink, err = f.buildSink(opt); err != nil {
		return nil, err
	}
	if job.Checkpoint, err = f.buildCheckpoint(opt, job.Sink, job.Region); err != nil {
		return nil, err
	}
	if s.DeadLetterPath != "" {
		// The dead-letter file's directory is created with the sink's.
		job.Sink = withMkdir(job.Sink, filepath.Dir(f.path(s.DeadLetterPath)), "dead-letter directory")
	}
	ok = true
	return job, nil
}

// ioStates describes the job's source and sink for runtime.Checkpointing:
// their settings as JSON, without what a restored run may change (a
// generator's count and rate, a CSV file's parsing parallelism).
// maxWorkers bounds source.parallelism and runtime.output_workers.
const maxWorkers = 256

// workers is a worker count from the file (key, 0 = the engine chooses)
// or, if > 0, from the command line (flag).
func (f *File) workers(key, flag string, inFile, fromFlag int) (int, error) {
	if fromFlag < 0 || fromFlag > maxWorkers {
		return 0, fmt.Errorf("%s %d: must be between 1 and %d", flag, fromFlag, maxWorkers)
	}
	if fromFlag > 0 {
		return fromFlag, nil
	}
	if inFile < 0 || inFile > maxWorkers {
		_, name, _ := strings.Cut(key, ".")
		return 0, f.errAt(key, "%s must be between 0 (auto) and %d, not %d", name, maxWorkers, inFile)
	}
	return inFile, nil
}

// durationValue renders a duration setting by its value (def when unset or
// unparsable: the build reports those).
func durationValue(v string, def time.Duration) string {
	if v == "" {
		return def.String()
	}
	if d, err := time.ParseDuration(v); err == nil {
		return d.String()
	}
	return v
}

// ioStates is Spec.ioStates with file paths resolved to absolute ones
// (relative to the job file): the same file written another way is the
// same sink.
func (f *File) ioStates() (source, sink string) {
	return f.Spec.ioStates(func(p string) string {
		if a, err := filepath.Abs(f.path(p)); err == nil {
			return a
		}
		return filepath.Clean(p)
	})
}

func (s *Spec) ioStates(resolve func(string) string) (source, sink string) {
	in := s.Source
	if c := in.CSV; c != nil {
		cc := *c
		cc.Parallelism = 0
		in.CSV = &cc
	}
	if g := in.Generator; g != nil {
		gg := *g
		gg.Count, gg.Rate, gg.RateSteps = 0, 0, nil
		// Defaults written out, and durations by value (1ms = 1000us).
		if gg.Keys == 0 {
			gg.Keys = 1000
		}
		if gg.Distribution == "" {
			gg.Distribution = "uniform"
		}
		if gg.ZipfS == 0 {
			gg.ZipfS = 1.1
		}
		gg.Step = durationValue(gg.Step, time.Millisecond)
		if t, err := core.ParseTime(gg.Start); err == nil && gg.Start != "" {
			gg.Start = time.Unix(0, t).UTC().Format(time.RFC3339Nano)
		} else if gg.Start == "" {
			gg.Start = time.Unix(0, 0).UTC().Format(time.RFC3339Nano)
		}
		in.Generator = &gg
	}
	source = chosen(in)
	if et := s.EventTime; et != nil && et.Field != "" {
		// Event time decides which records are late and when windows
		// fire: part of what the restored position means.
		e := *et
		e.MaxOutOfOrderness = durationValue(e.MaxOutOfOrderness, 0)
		source += "; " + render("event_time", &e)
	}
	// The sink as it writes: defaults spelled out, paths cleaned, so
	// that writing a default out does not count as a change.
	out := s.Sink
	if c := out.CSV; c != nil {
		cc := *c
		header := cc.Header == nil || *cc.Header
		cc.Header, cc.Path = &header, resolve(cc.Path)
		if cc.Delimiter == "" {
			cc.Delimiter = ","
		}
		out.CSV = &cc
	}
	if j := out.JSONL; j != nil {
		jj := *j
		jj.Path = resolve(jj.Path)
		out.JSONL = &jj
	}
	if st := out.Stdout; st != nil && st.Format == "" {
		out.Stdout = &StdoutSpec{Format: "csv"}
	}
	return source, chosen(out)
}

// chosen renders the one member set in a SourceSpec or SinkSpec under its
// job-file name (render).
func chosen(spec any) string {
	v := reflect.ValueOf(spec)
	for i := range v.NumField() {
		if f := v.Field(i); !f.IsNil() {
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
			return render(name, f.Interface())
		}
	}
	return ""
}

// render writes {name: v} on one line with v's job-file names, e.g.
// {"csv":{"delimiter":",","header":true,"path":"out/x.csv"}}: for
// checkpoints to record and for messages to show.
func render(name string, v any) string {
	y, err := yaml.Marshal(map[string]any{name: v})
	if err != nil {
		return fmt.Sprint(v)
	}
	var m any
	if err := yaml.Unmarshal(y, &m); err != nil {
		return string(y)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return string(y)
	}
	return string(b)
}

// maxChannels bounds region.channels and --channels.
const maxChannels = 1024

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// fill sets *p to a zero T when the key is present but *p is nil.
func fill[T any](present bool, p **T) {
	if present && *p == nil {
		*p = new(T)
	}
}

func exactlyOne(path string, f *File, names []string, set []bool) (int, error) {
	idx := -1
	for i, s := range set {
		if !s {
			continue
		}
		if idx >= 0 {
			return -1, f.errAt(path, "has both %s and %s; expected exactly one of %s", names[idx], names[i], strings.Join(names, ", "))
		}
		idx = i
	}
	if idx < 0 {
		return -1, f.errAt(path, "expected one of %s", strings.Join(names, ", "))
	}
	return idx, nil
}

func (f *File) fields(path string, ms yaml.MapSlice) ([]core.Field, error) {
	var fs []core.Field
	for _, it := range ms {
		name := fmt.Sprint(it.Key)
		ts, _ := it.Value.(string)
		t, err := core.ParseType(ts)
		if err != nil {
			return nil, f.errAt(path+"."+name, "%v", err)
		}
		fs = append(fs, core.Field{Name: name, Type: t})
	}
	return fs, nil
}

func (f *File) duration(path, s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, f.errAt(path, "%q is not a duration (expected e.g. 1h, 15m, 500ms)", s)
	}
	return d, nil
}

func (f *File) buildSource(errs *core.ErrorPolicy) (core.Source, error) {
	src := &f.Spec.Source
	// A key with no value ("stdin:") decodes to nil; it still names the
	// source.
	fill(f.present("source.parquet"), &src.Parquet)
	fill(f.present("source.csv"), &src.CSV)
	fill(f.present("source.jsonl"), &src.JSONL)
	fill(f.present("source.stdin"), &src.Stdin)
	fill(f.present("source.generator"), &src.Generator)
	i, err := exactlyOne("source", f, []string{"parquet", "csv", "jsonl", "stdin", "generator"},
		[]bool{src.Parquet != nil, src.CSV != nil, src.JSONL != nil, src.Stdin != nil, src.Generator != nil})
	if err != nil {
		return nil, err
	}
	var s core.Source
	switch i {
	case 0:
		p := src.Parquet
		if p.Path == "" {
			return nil, f.errAt("source.parquet", "missing path")
		}
		s, err = source.Parquet(f.path(p.Path), p.Columns, errs)
		if err != nil {
			return nil, f.errAt("source.parquet.path", "%v", err)
		}
	case 1:
		c := src.CSV
		if c.Path == "" {
			return nil, f.errAt("source.csv", "missing path")
		}
		opts, err := f.csvOptions("source.csv", c.Header, c.Delimiter, c.Columns)
		if err != nil {
			return nil, err
		}
		if c.Parallelism < 0 || c.Parallelism > maxCSVParallelism {
			return nil, f.errAt("source.csv.parallelism", "parallelism must be between 0 (auto) and %d, not %d", maxCSVParallelism, c.Parallelism)
		}
		opts.Parallelism = c.Parallelism
		if s, err = source.CSV(f.path(c.Path), opts, errs); err != nil {
			return nil, f.errAt("source.csv.path", "%v", err)
		}
	case 2:
		j := src.JSONL
		if j.Path == "" {
			return nil, f.errAt("source.jsonl", "missing path")
		}
		fs, err := f.fields("source.jsonl.fields", j.Fields)
		if err != nil {
			return nil, err
		}
		if len(fs) == 0 {
			return nil, f.errAt("source.jsonl", "missing fields (name: type)")
		}
		if s, err = source.JSONL(f.path(j.Path), fs, nil, errs); err != nil {
			return nil, f.errAt("source.jsonl.path", "%v", err)
		}
	case 3:
		in := src.Stdin
		switch in.Format {
		case "csv":
			opts, err := f.csvOptions("source.stdin", in.Header, in.Delimiter, in.Fields)
			if err != nil {
				return nil, err
			}
			s, err = source.Stdin("csv", source.StdinOptions{Header: opts.Header, Delimiter: opts.Delimiter, Columns: opts.Columns}, errs)
			if err != nil {
				return nil, f.errAt("source.stdin", "%v", err)
			}
		case "jsonl":
			fs, err := f.fields("source.stdin.fields", in.Fields)
			if err != nil {
				return nil, err
			}
			if len(fs) == 0 {
				return nil, f.errAt("source.stdin", "missing fields (name: type)")
			}
			if s, err = source.Stdin("jsonl", source.StdinOptions{Columns: fs}, errs); err != nil {
				return nil, f.errAt("source.stdin", "%v", err)
			}
		default:
			return nil, f.errAt("source.stdin.format", "format %q: expected csv or jsonl", in.Format)
		}
	case 4:
		g := src.Generator
		opts := source.GeneratorOptions{Seed: g.Seed, Count: g.Count, Rate: g.Rate, Keys: g.Keys, Distribution: g.Distribution, ZipfS: g.ZipfS}
		if g.Start != "" {
			if opts.Start, err = core.ParseTime(g.Start); err != nil {
				return nil, f.errAt("source.generator.start", "%v", err)
			}
		}
		step, err := f.duration("source.generator.step", g.Step, 0)
		if err != nil {
			return nil, err
		}
		opts.Step = int64(step)
		for i, st := range g.RateSteps {
			p := fmt.Sprintf("source.generator.rate_steps[%d]", i)
			at, err := f.duration(p+".at", st.At, 0)
			if err != nil {
				return nil, err
			}
			opts.RateSteps = append(opts.RateSteps, source.RateStep{At: at, Rate: st.Rate})
		}
		if s, err = source.Generator(opts); err != nil {
			return nil, f.errAt("source.generator", "%v", err)
		}
	}
	return s, nil
}

// maxCSVParallelism bounds source.csv.parallelism: each parsing goroutine
// keeps about two blocks of 256 KiB and their parsed records in flight
// (1000 goroutines took 520 MB), and more goroutines than cores gain
// nothing.
const maxCSVParallelism = 256

func (f *File) csvOptions(path string, header *bool, delim string, cols yaml.MapSlice) (source.CSVOptions, error) {
	opts := source.CSVOptions{Header: header == nil || *header}
	if delim != "" {
		r := []rune(delim)
		if len(r) != 1 {
			return opts, f.errAt(path+".delimiter", "delimiter must be one character, not %q", delim)
		}
		opts.Delimiter = r[0]
	}
	fs, err := f.fields(path+".columns", cols)
	if err != nil {
		return opts, err
	}
	opts.Columns = fs
	return opts, nil
}

func (f *File) buildEventTime(et *EventTimeSpec, s *core.Schema) (runtime.EventTime, error) {
	out := runtime.EventTime{Field: et.Field}
	i, err := s.Lookup(et.Field)
	if err != nil {
		return out, f.errAt("event_time.field", "%v", err)
	}
	switch t := s.Fields[i].Type; t {
	case core.Timestamp:
		if et.Unit != "" {
			return out, f.errAt("event_time.unit", "unit applies to int64 fields; %q is a timestamp", et.Field)
		}
	case core.Int64:
		units := map[string]int64{"": int64(time.Millisecond), "ns": 1, "us": int64(time.Microsecond), "ms": int64(time.Millisecond), "s": int64(time.Second)}
		u, ok := units[et.Unit]
		if !ok {
			return out, f.errAt("event_time.unit", "unit %q: expected ns, us, ms or s", et.Unit)
		}
		out.Unit = u
	default:
		return out, f.errAt("event_time.field", "field %q is a %s; event time needs a timestamp or int64", et.Field, t)
	}
	d, err := f.duration("event_time.max_out_of_orderness", et.MaxOutOfOrderness, 0)
	if err != nil {
		return out, err
	}
	if d < 0 {
		return out, f.errAt("event_time.max_out_of_orderness", "must not be negative")
	}
	out.MaxOutOfOrder = int64(d)
	return out, nil
}

var opNames = []string{"filter", "map", "project", "lookup_csv", "lookup_http", "window", "aggregate"}

func (f *File) buildOps(path string, specs []OpSpec, in *core.Schema, errs *core.ErrorPolicy, reg *runtime.Region) ([]core.OperatorDef, *core.Schema, error) {
	var defs []core.OperatorDef
	for i := range specs {
		p := fmt.Sprintf("%s[%d]", path, i)
		def, err := f.buildOp(p, &specs[i], in, errs, reg)
		if err != nil {
			return nil, nil, err
		}
		defs = append(defs, def)
		in = def.Out
	}
	return defs, in, nil
}

func (f *File) buildOp(p string, o *OpSpec, in *core.Schema, errs *core.ErrorPolicy, reg *runtime.Region) (core.OperatorDef, error) {
	k, err := exactlyOne(p, f, opNames, []bool{o.Filter != nil, o.Map != nil, o.Project != nil,
		o.LookupCSV != nil, o.LookupHTTP != nil, o.Window != nil, o.Aggregate != nil})
	if err != nil {
		return core.OperatorDef{}, err
	}
	kp := p + "." + opNames[k]
	name := o.Name
	if name == "" {
		name = kp
	}
	if (k == 5 || k == 6) && (reg == nil || len(reg.Key) == 0) {
		return core.OperatorDef{}, f.errAt(kp, "%s keeps keyed state: it belongs in a region with key_by", opNames[k])
	}
	var def core.OperatorDef
	switch k {
	case 0:
		if _, err := f.compile(kp, *o.Filter, in); err != nil {
			return def, err
		}
		def, err = ops.Filter(name, *o.Filter, in, errs)
	case 1:
		var fields []ops.MapField
		for _, it := range o.Map {
			fname := fmt.Sprint(it.Key)
			src, ok := it.Value.(string)
			if !ok {
				src = fmt.Sprint(it.Value)
			}
			if _, err := f.compile(kp+"."+fname, src, in); err != nil {
				return def, err
			}
			fields = append(fields, ops.MapField{Name: fname, Expr: src})
		}
		def, err = ops.Map(name, fields, true, in, errs)
	case 2:
		cols := make([]ops.Column, len(o.Project))
		for i, c := range o.Project {
			cols[i].From, cols[i].As = splitAs(c)
		}
		def, err = ops.ProjectColumns(name, cols, in)
	case 3:
		l := o.LookupCSV
		if err := f.lookupKey(kp, l.Key, in); err != nil {
			return def, err
		}
		opts := ops.LookupCSVOptions{Path: f.path(l.Path), Key: l.Key, TableKey: l.TableKey, OnMiss: l.OnMiss}
		for _, fl := range l.Fields {
			col, as := splitAs(fl)
			opts.Fields = append(opts.Fields, ops.LookupField{Column: col, As: as})
		}
		def, err = ops.LookupCSV(name, opts, in, errs)
	case 4:
		l := o.LookupHTTP
		if err := f.lookupKey(kp, l.Key, in); err != nil {
			return def, err
		}
		fs, ferr := f.fields(kp+".fields", l.Fields)
		if ferr != nil {
			return def, ferr
		}
		ttl, derr := f.duration(kp+".ttl", l.TTL, time.Minute)
		if derr != nil {
			return def, derr
		}
		timeout, derr := f.duration(kp+".timeout", l.Timeout, 5*time.Second)
		if derr != nil {
			return def, derr
		}
		def, err = ops.LookupHTTP(name, ops.LookupHTTPOptions{URL: l.URL, Key: l.Key, Fields: fs, TTL: ttl,
			MaxCost: l.MaxCost, Timeout: timeout, OnMiss: l.OnMiss, NumCounters: l.CacheKeys}, in, errs)
	case 5:
		w := o.Window
		if f.Spec.EventTime == nil {
			return def, f.errAt(kp, "a window needs event time (expected event_time: with a field)")
		}
		size, derr := f.duration(kp+".size", w.Size, 0)
		if derr != nil {
			return def, derr
		}
		if size <= 0 {
			return def, f.errAt(kp+".size", "window size must be a positive duration (e.g. 1h)")
		}
		slide, derr := f.duration(kp+".slide", w.Slide, 0)
		if derr != nil {
			return def, derr
		}
		if slide < 0 || slide > size || slide > 0 && size%slide != 0 {
			return def, f.errAt(kp+".slide", "slide %s must be positive, at most the size %s, and divide it", slide, size)
		}
		key := w.Key
		if len(key) == 0 {
			key = reg.Key
		}
		if err := window.CheckPartitioning(key, reg.Key); err != nil {
			return def, f.errAt(kp+".key", "%v", err)
		}
		aggs, aerr := f.aggregates(kp+".aggregates", w.Aggregates, in)
		if aerr != nil {
			return def, aerr
		}
		late := false
		switch w.Late {
		case "", "drop":
		case "dead_letter":
			if f.Spec.DeadLetterPath == "" {
				return def, f.errAt(kp+".late", "late: dead_letter needs dead_letter_path")
			}
			late = true
		default:
			return def, f.errAt(kp+".late", "late %q: expected drop or dead_letter", w.Late)
		}
		def, err = window.New(window.Spec{Name: name, Key: key, Size: int64(size), Slide: int64(slide),
			Aggs: aggs, LateToDeadLetter: late, Groups: reg.Groups}, in)
	case 6:
		a := o.Aggregate
		key := a.Key
		if len(key) == 0 {
			key = reg.Key
		}
		if err := window.CheckPartitioning(key, reg.Key); err != nil {
			return def, f.errAt(kp+".key", "%v", err)
		}
		aggs, aerr := f.aggregates(kp+".aggregates", a.Aggregates, in)
		if aerr != nil {
			return def, aerr
		}
		def, err = window.NewRunning(window.RunningSpec{Name: name, Key: key, Aggs: aggs, Groups: reg.Groups}, in)
	}
	if err != nil {
		// The operator's errors start with its name, which is kp unless
		// the file names it.
		msg := strings.TrimPrefix(err.Error(), opNames[k]+" "+name+": ")
		msg = strings.TrimPrefix(msg, name+": ")
		return def, f.errAt(kp, "%s", msg)
	}
	return def, nil
}

// lookupKey checks a lookup's key field.
func (f *File) lookupKey(kp, key string, in *core.Schema) error {
	if key == "" {
		return f.errAt(kp, "missing key (the input field to look up)")
	}
	if _, err := in.Lookup(key); err != nil {
		return f.errAt(kp+".key", "%v", err)
	}
	return nil
}

var asRe = regexp.MustCompile(`^\s*(\S+)\s+as\s+(\S+)\s*$`)

func splitAs(s string) (string, string) {
	if m := asRe.FindStringSubmatch(s); m != nil {
		return m[1], m[2]
	}
	return strings.TrimSpace(s), ""
}

var aggRe = regexp.MustCompile(`^\s*(\w+)\s*(?:\((.*)\))?\s*$`)

func article(t core.Type) string {
	if t == core.Int64 {
		return "an int64"
	}
	return "a " + t.String()
}

func (f *File) aggregates(path string, ms yaml.MapSlice, in *core.Schema) ([]window.Agg, error) {
	if len(ms) == 0 {
		return nil, f.errAt(path, "no aggregates (expected name: fn(arg), e.g. flights: count)")
	}
	var aggs []window.Agg
	for _, it := range ms {
		name := fmt.Sprint(it.Key)
		p := path + "." + name
		src, _ := it.Value.(string)
		m := aggRe.FindStringSubmatch(src)
		mi := aggRe.FindStringSubmatchIndex(src)
		if m == nil {
			return nil, f.errAt(p, "%q: expected fn(arg), e.g. count, sum(distance), count_if(delay > 15)", src)
		}
		fn, err := window.ParseFunc(m[1])
		if err != nil {
			return nil, f.errAt(p, "%v", err)
		}
		a := window.Agg{Name: name, Func: fn}
		arg := strings.TrimSpace(m[2])
		switch fn {
		case window.Count:
			if arg != "" {
				return nil, f.errAt(p, "count takes no argument (use count_if(cond) to count matches)")
			}
		case window.CountIf:
			if arg == "" {
				return nil, f.errAt(p, "count_if needs a condition, e.g. count_if(delay > 15)")
			}
			lo := mi[4] + strings.Index(m[2], arg)
			prog, err := f.compileIn(p, src, lo, lo+len(arg), in)
			if err != nil {
				return nil, err
			}
			if prog.Type() != core.Bool {
				return nil, f.errAt(p, "count_if(%s) is %s, expected a bool condition", arg, article(prog.Type()))
			}
			a.If = prog
		default:
			if arg == "" {
				return nil, f.errAt(p, "%s needs a field, e.g. %s(delay)", m[1], m[1])
			}
			i, err := in.Lookup(arg)
			if err != nil {
				return nil, f.errAt(p, "%v", err)
			}
			switch t := in.Fields[i].Type; {
			case t == core.Int64 || t == core.Float64:
			case t == core.Timestamp && (fn == window.Min || fn == window.Max):
			default:
				return nil, f.errAt(p, "%s(%s): %q is %s; expected an int64 or float64 field (min and max also take a timestamp)", m[1], arg, arg, article(t))
			}
			a.Field = arg
		}
		aggs = append(aggs, a)
	}
	return aggs, nil
}

// compile compiles an expression, reporting errors at their position inside
// the expression's YAML value.
func (f *File) compile(path, src string, in *core.Schema) (*eval.Program, error) {
	return f.compileIn(path, src, 0, len(src), in)
}

// compileIn compiles value[lo:hi], a part of the YAML value at path (the
// condition inside count_if(…)), reporting errors at their position in the
// file.
func (f *File) compileIn(path, value string, lo, hi int, in *core.Schema) (*eval.Program, error) {
	prog, err := eval.Compile(value[lo:hi], in)
	if err == nil {
		return prog, nil
	}
	e := &Error{File: f.Path, Path: path, Msg: err.Error()}
	e.Line, e.Column = f.pos(path)
	var ee *eval.Error
	if errors.As(err, &ee) {
		e.Msg = ee.Msg
		if e.Line > 0 {
			e.Line, e.Column = f.valuePos(e.Line, e.Column, value, lo+ee.Offset)
		}
	}
	e.Line, e.Column = f.rawPos(e.Line, e.Column)
	return nil, e
}

// valuePos maps byte offset off of a scalar's decoded value to its line and
// column in the file, the scalar starting at line:col. Folding, indentation
// and quotes change only whitespace and delimiters, so it counts the
// value's non-blank characters before off and walks the same number of
// them in the file (a backslash escape or a doubled single quote counting
// as one). An offset at the end of the value maps to just after its last
// character.
func (f *File) valuePos(line, col int, value string, off int) (int, int) {
	off = min(off, len(value))
	want := 0
	for _, r := range value[:off] {
		if !isBlank(r) {
			want++
		}
	}
	atEnd := strings.TrimFunc(value[off:], isBlank) == ""
	lines := f.lines()
	if line-1 >= len(lines) {
		return line, col
	}
	rs := []rune(lines[line-1])
	if col-1 >= len(rs) {
		return line, col
	}
	quote := rune(0)
	i := col - 1
	switch rs[i] {
	case '|', '>': // block scalar: the value starts on the next line
		line, i, rs = line+1, 0, nil
		if line-1 < len(lines) {
			rs = []rune(lines[line-1])
		}
	case '"', '\'':
		quote = rs[i]
		i++
	}
	endLine, endCol := line, i+1
	seen := 0
	for line-1 < len(lines) {
		for i < len(rs) {
			r := rs[i]
			if isBlank(r) {
				i++
				continue
			}
			if seen == want && !atEnd {
				return line, i + 1
			}
			n := 1
			switch {
			case quote == '"' && r == '\\' && i+1 < len(rs):
				n = map[rune]int{'x': 4, 'u': 6, 'U': 10}[rs[i+1]]
				n = max(n, 2)
			case quote == '\'' && r == '\'' && i+1 < len(rs) && rs[i+1] == '\'':
				n = 2
			}
			i += n
			seen++
			endLine, endCol = line, i+1
			if seen == want && atEnd {
				return endLine, endCol
			}
		}
		line, i = line+1, 0
		if line-1 < len(lines) {
			rs = []rune(lines[line-1])
		}
	}
	return endLine, endCol
}

func isBlank(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }

func (f *File) buildSink(opt Options) (core.Sink, error) {
	sk := &f.Spec.Sink
	fill(f.present("sink.csv"), &sk.CSV)
	fill(f.present("sink.jsonl"), &sk.JSONL)
	fill(f.present("sink.stdout"), &sk.Stdout)
	fill(f.present("sink.discard"), &sk.Discard)
	i, err := exactlyOne("sink", f, []string{"csv", "jsonl", "stdout", "discard"},
		[]bool{sk.CSV != nil, sk.JSONL != nil, sk.Stdout != nil, sk.Discard != nil})
	if err != nil {
		return nil, err
	}
	switch i {
	case 3:
		return &sink.Discard{}, nil
	case 0:
		c := sk.CSV
		if c.Path == "" {
			return nil, f.errAt("sink.csv", "missing path")
		}
		opts := sink.CSVOptions{Header: c.Header == nil || *c.Header}
		if c.Delimiter != "" {
			r := []rune(c.Delimiter)
			if len(r) != 1 {
				return nil, f.errAt("sink.csv.delimiter", "delimiter must be one character, not %q", c.Delimiter)
			}
			opts.Delimiter = r[0]
		}
		if err := f.checkSinkPath("sink.csv.path", f.path(c.Path)); err != nil {
			return nil, err
		}
		return withMkdir(sink.CSV(f.path(c.Path), opts), filepath.Dir(f.path(c.Path)), "sink directory"), nil
	case 1:
		if sk.JSONL.Path == "" {
			return nil, f.errAt("sink.jsonl", "missing path")
		}
		if err := f.checkSinkPath("sink.jsonl.path", f.path(sk.JSONL.Path)); err != nil {
			return nil, err
		}
		return withMkdir(sink.JSONL(f.path(sk.JSONL.Path)), filepath.Dir(f.path(sk.JSONL.Path)), "sink directory"), nil
	}
	format := sk.Stdout.Format
	if format == "" {
		format = "csv"
	}
	if format != "csv" && format != "jsonl" {
		return nil, f.errAt("sink.stdout.format", "format %q: expected csv or jsonl", format)
	}
	w := opt.Stdout
	if w == nil {
		w = os.Stdout
	}
	sk2, err := sink.Stdout(format, w, sink.CSVOptions{Header: true})
	if err != nil {
		return nil, f.errAt("sink.stdout", "%v", err)
	}
	return sk2, nil
}

// mkdirSink creates a file sink's directory (or the dead-letter file's)
// when the job starts, as users of Flink's and Benthos's file sinks expect.
type mkdirSink struct {
	core.Sink
	dir  string
	what string // for errors: "sink directory", "dead-letter directory"
}

// mkdirEncodingSink is a mkdirSink around a core.EncodingSink, which it
// stays.
type mkdirEncodingSink struct{ mkdirSink }

func (m mkdirEncodingSink) NewEncoder() core.Encoder {
	return m.Sink.(core.EncodingSink).NewEncoder()
}

func (m mkdirEncodingSink) WriteEncoded(p []byte) error {
	return m.Sink.(core.EncodingSink).WriteEncoded(p)
}

// withMkdir wraps s in a mkdirSink that keeps s's ability to encode apart.
func withMkdir(s core.Sink, dir, what string) core.Sink {
	m := mkdirSink{s, dir, what}
	if _, ok := s.(core.EncodingSink); ok {
		return mkdirEncodingSink{m}
	}
	return m
}

func (m mkdirSink) Open(s *core.Schema) error {
	if err := os.MkdirAll(m.dir, 0o755); err != nil {
		return fmt.Errorf("%s: %w", m.what, err)
	}
	return m.Sink.Open(s)
}

// OpenEpochs, Barrier and Commit pass core.EpochSink through the wrapper.
func (m mkdirSink) OpenEpochs(s *core.Schema, restored uint64) error {
	es, ok := m.Sink.(core.EpochSink)
	if !ok {
		return m.Open(s)
	}
	if err := os.MkdirAll(m.dir, 0o755); err != nil {
		return fmt.Errorf("%s: %w", m.what, err)
	}
	return es.OpenEpochs(s, restored)
}

// Manifest and VerifyOutput pass core.OutputManifest through the wrapper.
func (m mkdirSink) Manifest() []byte {
	if om, ok := m.Sink.(core.OutputManifest); ok {
		return om.Manifest()
	}
	return nil
}

func (m mkdirSink) VerifyOutput(manifest []byte, restored uint64) error {
	if om, ok := m.Sink.(core.OutputManifest); ok {
		return om.VerifyOutput(manifest, restored)
	}
	return nil
}

func (m mkdirSink) Barrier(epoch uint64) error {
	if es, ok := m.Sink.(core.EpochSink); ok {
		return es.Barrier(epoch)
	}
	return nil
}

func (m mkdirSink) Commit(epoch uint64) error {
	if es, ok := m.Sink.(core.EpochSink); ok {
		return es.Commit(epoch)
	}
	return nil
}

// buildCheckpoint opens the checkpoint store and, with Options.Restore,
// the checkpoint to resume from.
func (f *File) buildCheckpoint(opt Options, sink core.Sink, region *runtime.Region) (*runtime.Checkpointing, error) {
	c := f.Spec.Checkpoint
	if c == nil {
		if opt.Restore != "" {
			return nil, f.errAt("", "--restore needs a checkpoint: section in the job file")
		}
		return nil, nil
	}
	if c.Dir == "" {
		return nil, f.errAt("checkpoint", "missing dir")
	}
	interval, err := f.duration("checkpoint.interval", c.Interval, 10*time.Second)
	if err != nil {
		return nil, err
	}
	if interval <= 0 {
		return nil, f.errAt("checkpoint.interval", "interval must be positive")
	}
	if c.Retain < 0 {
		return nil, f.errAt("checkpoint.retain", "retain must be at least 1 (0 or unset: the default, 3)")
	}
	retain := c.Retain
	if retain == 0 {
		retain = 3
	}
	if f.Spec.Source.Stdin != nil {
		return nil, f.errAt("checkpoint", "a stdin source cannot be replayed after a restore; checkpoints need a file or generator source")
	}
	timeout, err := f.duration("checkpoint.timeout", c.Timeout, 10*time.Minute)
	if err != nil {
		return nil, err
	}
	if timeout <= 0 {
		return nil, f.errAt("checkpoint.timeout", "timeout must be positive")
	}
	cp := &runtime.Checkpointing{Interval: interval, Timeout: timeout}
	cp.Source, cp.Sink = f.ioStates()
	dir := f.path(c.Dir)
	if opt.Validate {
		return cp, f.viewCheckpoints(dir, opt)
	}
	// Besides its files' checksums, a checkpoint to restore must have been
	// taken by this job, and the output it committed must be intact.
	fits := func(c *snapshot.Checkpoint) error {
		if err := runtime.CheckRestore(&c.Meta, cp, region); err != nil {
			return err
		}
		// A generator's count may change, but not to below the position:
		// the replay would end before it (an older checkpoint may do).
		if g := f.Spec.Source.Generator; g != nil && g.Count > 0 && c.Meta.Sources["source"] > g.Count {
			return fmt.Errorf("%s: the generator's count %d is below the checkpoint's position %d", snapshot.Name(c.Meta.ID), g.Count, c.Meta.Sources["source"])
		}
		return runtime.VerifyOutput(sink, c)
	}
	// A restore that is bound to be refused creates nothing: OpenLocked
	// would make the directory and its lock file first.
	var given *snapshot.Checkpoint
	switch opt.Restore {
	case "":
	case "latest":
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("--restore latest: %w in %s to resume from; run without --restore to start afresh", snapshot.ErrNoCheckpoint, dir)
		}
	default: // a checkpoint from elsewhere may start a new directory
		if given, err = snapshot.Load(opt.Restore, nil); err == nil {
			err = fits(given)
		}
		if errors.Is(err, core.ErrOutputDamaged) {
			return nil, fmt.Errorf("restore: %w; a checkpoint restores only beside the output it committed: restore from an older checkpoint of this run taken before the damaged part's epoch, if there is one (streamd checkpoints list), or start afresh", err)
		}
		if err != nil {
			return nil, fmt.Errorf("restore: %w", err)
		}
	}
	if cp.Store, err = snapshot.OpenLocked(dir, retain); err != nil {
		return nil, f.errAt("checkpoint.dir", "%v", err)
	}
	built := false
	defer func() {
		if !built {
			cp.Store.Unlock()
		}
	}()
	switch opt.Restore {
	case "":
		if n, err := cp.Store.Count(); err != nil {
			return nil, f.errAt("checkpoint.dir", "%v", err)
		} else if n > 0 {
			return nil, f.errAt("checkpoint.dir", "%s holds %d checkpoint(s) of an unfinished run: resume it with --restore latest, or remove the directory to start afresh", dir, n)
		}
	case "latest":
		// A checkpoint whose committed output was damaged since is
		// skipped like one that fails verification: an older one
		// rewinds the source to before the damaged part and writes it
		// again.
		// A job that does not fit its checkpoints is refused as such,
		// not as if every checkpoint were damaged.
		var mismatch error
		ck, skipped, err := cp.Store.LatestWhere(func(c *snapshot.Checkpoint) error {
			err := fits(c)
			if errors.Is(err, runtime.ErrCheckpointMismatch) && mismatch == nil {
				mismatch = err
			}
			return err
		})
		if mismatch != nil {
			return nil, fmt.Errorf("restore: %w", mismatch)
		}
		for _, s := range skipped {
			if opt.Warn != nil && err == nil { // else the error lists them
				opt.Warn(fmt.Sprintf("skipping checkpoint: %v", s))
			}
		}
		if errors.Is(err, snapshot.ErrNoCheckpoint) {
			return nil, fmt.Errorf("--restore latest: %w in %s to resume from; run without --restore to start afresh", snapshot.ErrNoCheckpoint, dir)
		}
		if errors.Is(err, core.ErrOutputDamaged) {
			return nil, fmt.Errorf("restore: %w; output committed before the oldest checkpoint was damaged, so no checkpoint can restore it: remove %s and run without --restore to start afresh", err, dir)
		}
		if err != nil {
			return nil, fmt.Errorf("restore: %w", err)
		}
		cp.Restore = ck
	default:
		cp.Restore = given
	}
	if cp.Restore != nil {
		if err := cp.Store.DiscardAfter(cp.Restore.Meta.ID); err != nil {
			return nil, fmt.Errorf("restore: %w", err)
		}
		if opt.Info != nil {
			opt.Info(fmt.Sprintf("restoring from %s (source position %d)", cp.Restore.Dir, cp.Restore.Meta.Sources["source"]))
		}
	}
	built = true // runtime.Run unlocks the store when the job is over
	return cp, nil
}

// viewCheckpoints checks checkpoint.dir for validate without changing
// anything on disk: a path that exists and is not a directory is an error;
// complete checkpoints of an unfinished run are not (the job may be about
// to be resumed with --restore), but are mentioned through opt.Warn.
func (f *File) viewCheckpoints(dir string, opt Options) error {
	st, err := os.Stat(dir)
	if err != nil {
		return f.checkParents("checkpoint.dir", filepath.Join(dir, "chk"))
	}
	if !st.IsDir() {
		return f.errAt("checkpoint.dir", "%s is %s, not a directory", dir, fileKind(st.Mode()))
	}
	n, err := snapshot.View(dir, nil).Count()
	if err != nil {
		return f.errAt("checkpoint.dir", "%v", err)
	}
	switch {
	case opt.Warn == nil:
	case snapshot.InUse(dir):
		opt.Warn(fmt.Sprintf("%s is in use by a running job: a run of this job now is refused until it ends", dir))
	case n > 0:
		opt.Warn(fmt.Sprintf("%s holds %d checkpoint(s) of an unfinished run: run --restore latest resumes it; run without --restore refuses to start until the directory is removed", dir, n))
	}
	return nil
}

// buildElastic configures live channel changes: a controller policy, or a
// seeded random schedule (tests, demonstrations).
func (f *File) buildElastic(e *ElasticSpec, reg *runtime.Region, opt Options) error {
	if e == nil {
		return nil
	}
	cfg := elastic.DefaultConfig()
	cfg.InitialChannels = reg.Channels
	period, err := f.duration("region.elastic.period", e.Period, time.Duration(cfg.PeriodNs))
	if err != nil {
		return err
	}
	cfg.PeriodNs = int64(period)
	if e.CongestionThreshold != nil {
		cfg.CongestionThreshold = *e.CongestionThreshold
	}
	if e.Sensitivity != nil {
		cfg.Sensitivity = *e.Sensitivity
	}
	if e.FastScaling != nil {
		cfg.FastScaling = *e.FastScaling
	}
	if e.MinChannels > 0 {
		cfg.MinChannels = e.MinChannels
	}
	if e.ScaleDownPeriods > 0 {
		cfg.ScaleDownPeriods = e.ScaleDownPeriods
	}
	cfg.MaxChannels = e.MaxChannels
	if cfg.MaxChannels == 0 {
		cfg.MaxChannels = max(reg.Channels, goruntime.NumCPU()-2, 1)
	}
	if cfg.MaxChannels > 1024 || (len(reg.Key) > 0 && cfg.MaxChannels > reg.Groups) {
		return f.errAt("region.elastic.max_channels", "max_channels %d: at most 1024 and the number of key groups", cfg.MaxChannels)
	}
	if cfg.MinChannels > cfg.MaxChannels {
		return f.errAt("region.elastic.min_channels", "min_channels %d exceeds max_channels %d", cfg.MinChannels, cfg.MaxChannels)
	}
	reg.MaxChannels = max(cfg.MaxChannels, reg.Channels)
	if e.RandomEvery > 0 {
		if e.Policy != "" && e.Policy != "random" {
			return f.errAt("region.elastic.random_every", "random_every goes with policy: random (or no policy), not %q", e.Policy)
		}
		rnd := rand.New(rand.NewPCG(e.Seed, 0x5eed))
		lo, hi := max(cfg.MinChannels, 1), cfg.MaxChannels
		every := int64(e.RandomEvery)
		reg.Schedule = func(b int64) int {
			if b%every != 0 {
				return 0
			}
			return lo + rnd.IntN(hi-lo+1)
		}
		return nil
	}
	switch e.Policy {
	case "", "levels", "ds2", "off":
	case "random":
		return f.errAt("region.elastic.policy", "policy random needs random_every")
	default:
		return f.errAt("region.elastic.policy", "unknown policy %q (expected levels, ds2, off or random)", e.Policy)
	}
	if err := cfg.Validate(); err != nil {
		return f.errAt("region.elastic", "%v", err)
	}
	policy := e.Policy
	if policy == "" {
		policy = "levels"
	}
	reg.Elastic = &runtime.Elastic{Policy: policy, Config: cfg, DryRun: e.DryRun, Timeline: opt.ElasticLog}
	return nil
}
