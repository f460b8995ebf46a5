package jobfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"streamd/core"
	"streamd/core/eval"
	"streamd/core/plan"
	"streamd/core/timeparse"
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
	// ElasticLog, if set, receives the region's reconfiguration timeline
	// (CSV: plan.Region.Timeline).
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
	// Cores is how many cores the job may use, for the defaults that
	// depend on them (an elastic region's max_channels: Cores − 2). 0:
	// Go's runtime.NumCPU (the affinity mask only); streamd passes the
	// runtime's count, which the cgroup quota bounds too
	// (runtime.UsableCores).
	Cores int
}

// cores is Cores, or Go's count when it is 0.
func (o Options) cores() int {
	if o.Cores > 0 {
		return o.Cores
	}
	return goruntime.NumCPU()
}

// Build opens the source, compiles every expression, loads lookup tables
// and binds every operator to its input schema. Errors name their position
// in the file. The caller runs the job with runtime.Run, which closes the
// source and the sink.
func (f *File) Build(opt Options) (*plan.Job, error) {
	s := &f.Spec
	mode, err := core.ParseErrorMode(s.OnError)
	if err != nil {
		return nil, f.errAt("on_error", "%v", err)
	}
	errs, err := core.NewErrorPolicy(mode, f.path(s.DeadLetterPath))
	if err != nil {
		return nil, f.errAt("on_error", "%s", strings.TrimPrefix(err.Error(), "on_error: "))
	}
	f.files = nil
	if s.DeadLetterPath != "" {
		if err := f.checkDeadLetterPath("dead_letter_path", f.path(s.DeadLetterPath)); err != nil {
			return nil, err
		}
	}
	job := &plan.Job{Name: s.Name, Errors: errs, RingSize: s.Runtime.RingSize}
	if job.Name == "" {
		job.Name = strings.TrimSuffix(baseName(f.Path), ".yaml")
	}
	if rs := s.Runtime.RingSize; rs < 0 || rs == 1 || rs&(rs-1) != 0 {
		return nil, f.errAt("runtime.ring_size", "ring size must be a power of two ≥ 2, not %d", rs)
	}
	switch bt := s.Runtime.BufferTarget; bt {
	case "":
	case "off":
		job.BufferTarget = -1
	default:
		d, err := time.ParseDuration(bt)
		if err != nil || d <= 0 {
			return nil, f.errAt("runtime.buffer_target", "%q is not a positive duration (e.g. 250ms, 1s) or off", bt)
		}
		job.BufferTarget = d
	}
	switch bl := s.Runtime.BatchLinger; bl {
	case "":
	case "off":
		job.BatchLinger = -1
	default:
		d, err := time.ParseDuration(bl)
		if err != nil || d <= 0 || d > time.Second {
			return nil, f.errAt("runtime.batch_linger", "%q is not a positive duration up to 1s (e.g. 1ms, 200us) or off", bl)
		}
		job.BatchLinger = d
	}
	if job.Source, err = f.buildSource(errs, opt); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			job.Source.Close()
		}
	}()
	if err := f.checkDeterminism(); err != nil { // after buildSource: `stdin:` is chosen there
		return nil, err
	}
	schema := job.Source.Schema()
	if et := s.EventTime; et != nil {
		if job.EventTime, err = f.buildEventTime(et, schema); err != nil {
			return nil, err
		}
	}
	if job.Pre, schema, err = f.buildOps("pipeline", s.Pipeline, schema, errs, nil); err != nil {
		return nil, err
	}
	if job.SourceParallelism, err = f.workers("source.parallelism", "--source-parallelism", s.Source.Parallelism(), opt.SourceParallelism); err != nil {
		return nil, err
	}
	if job.OutputParallelism, err = f.workers("runtime.output_workers", "--output-workers", s.Runtime.OutputWorkers, opt.OutputWorkers); err != nil {
		return nil, err
	}
	if opt.Channels != 0 && s.Region == nil {
		return nil, fmt.Errorf("--channels %d: %s has no parallel region (region:) whose channels it could set", opt.Channels, f.Path)
	}
	if opt.Channels < 0 || opt.Channels > maxChannels {
		return nil, fmt.Errorf("--channels must be between 1 and %d, not %d", maxChannels, opt.Channels)
	}
	if r := s.Region; r != nil {
		reg := &plan.Region{Channels: 1, Key: r.KeyBy, Groups: r.KeyGroups}
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
		if err := f.buildElastic(r.Elastic, reg, opt.Channels, opt.cores()); err != nil {
			return nil, err
		}
		if err := f.buildRebalance(r.Rebalance, reg); err != nil {
			return nil, err
		}
		reg.Timeline = opt.ElasticLog
		if reg.Ops, schema, err = f.buildOps("region.ops", r.Ops, schema, errs, reg); err != nil {
			return nil, err
		}
		if err := f.checkRegionOrder(reg); err != nil {
			return nil, err
		}
		job.Region = reg
	}
	if job.Post, schema, err = f.buildOps("post", s.Post, schema, errs, nil); err != nil {
		return nil, err
	}
	if s.DeadLetterPath != "" {
		// Checked once the input and lookup tables are claimed.
		dl := f.path(s.DeadLetterPath)
		if err := f.checkNotClaimed("dead_letter_path", dl, false, "dead letters would be appended to it"); err != nil {
			return nil, err
		}
		f.claimFile("dead_letter_path", dl, "the dead-letter file")
	}
	if job.Sink, err = f.buildSink(opt, schema); err != nil {
		return nil, err
	}
	if job.Checkpoint, err = f.buildCheckpoint(opt, job.Sink, job.Region); err != nil {
		return nil, err
	}
	if err := f.applyRestoredUpdates(job); err != nil {
		return nil, err
	}
	if s.DeadLetterPath != "" {
		// The dead-letter file's directory is created with the sink's.
		job.Sink = withMkdir(job.Sink, filepath.Dir(f.path(s.DeadLetterPath)), "dead-letter directory")
	}
	ok = true
	return job, nil
}

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

// ioStates describes the job's source and sink for plan.Checkpointing:
// each as its kind describes itself (sourceEntry.describe,
// sinkEntry.describe: without what a restored run may change, such as a
// generator's count and rate or a CSV file's parsing parallelism, and
// with defaults written out), rendered as JSON under its name.
func (s *Spec) ioStates(resolve func(string) string) (source, sink string) {
	if k, spec, ok := sourceKinds.chosen(s.Source.sources); ok {
		source = render(k.name, k.describe(spec))
	}
	if et := s.EventTime; et != nil && (et.Field != "" || et.Expr != "") {
		// Event time decides which records are late and when windows
		// fire: part of what the restored position means.
		e := *et
		e.MaxOutOfOrderness = durationValue(e.MaxOutOfOrderness, 0)
		if e.MaxAhead != "" {
			e.MaxAhead = durationValue(e.MaxAhead, 0)
		}
		source += "; " + render("event_time", &e)
	}
	// The sink as it writes: defaults spelled out, paths cleaned, so
	// that writing a default out does not count as a change.
	if k, spec, ok := sinkKinds.chosen(s.Sink.sinks); ok {
		sink = render(k.name, k.describe(spec, resolve))
	}
	return source, sink
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

// buildSource builds the one source of source:.
func (f *File) buildSource(errs *core.ErrorPolicy, opt Options) (core.Source, error) {
	k, spec, err := sourceKinds.choose(f, "source", f.Spec.Source.sources, true)
	if err != nil {
		return nil, err
	}
	return k.build(&sourceBuild{keyAt: keyAt{f, "source." + k.name}, errs: errs, validate: opt.Validate, info: opt.Info}, spec)
}

func (f *File) buildEventTime(et *EventTimeSpec, s *core.Schema) (plan.EventTime, error) {
	out := plan.EventTime{Field: et.Field, Input: f.sourceInput()}
	var t core.Type
	switch {
	case et.Expr != "" && et.Field != "":
		return out, f.errAt("event_time.expr", "give field or expr, not both")
	case et.Expr != "":
		prog, err := f.compile("event_time.expr", et.Expr, s)
		if err != nil {
			return out, err
		}
		t = prog.Type()
		if t != core.Timestamp && t != core.Int64 {
			return out, f.errAt("event_time.expr", "the expression is a %s; event time needs a timestamp or an int64 (with unit:)", t)
		}
		out.Of = eventTimeOf(prog, t)
	case et.Field != "":
		i, err := s.Lookup(et.Field)
		if err != nil {
			return out, f.errAt("event_time.field", "%v", err)
		}
		if t = s.Fields[i].Type; t != core.Timestamp && t != core.Int64 {
			return out, f.errAt("event_time.field", "field %q is a %s; event time needs a timestamp or int64", et.Field, t)
		}
		if s.Fields[i].Nullable {
			// A record's event time orders it and picks its windows; there is
			// no null time to give it.
			return out, f.errAt("event_time.field", "field %q is nullable; event time cannot be null (give the column a default: instead, or leave it not nullable so that a missing value is a malformed record)", et.Field)
		}
	default:
		return out, f.errAt("event_time", "missing field or expr (where event time comes from)")
	}
	switch t {
	case core.Timestamp:
		if et.Unit != "" {
			what := fmt.Sprintf("%q is a timestamp", et.Field)
			if et.Expr != "" {
				what = "the expression is a timestamp"
			}
			return out, f.errAt("event_time.unit", "unit applies to int64 event time; %s", what)
		}
	case core.Int64:
		u := int64(time.Millisecond)
		if et.Unit != "" {
			var ok bool
			if u, ok = timeparse.Units[et.Unit]; !ok {
				return out, f.errAt("event_time.unit", "unit %q: expected ns, us, ms or s", et.Unit)
			}
		}
		if out.Of != nil {
			of := out.Of
			out.Of = func(row []core.Value) (int64, error) {
				n, err := of(row)
				if err != nil {
					return 0, err
				}
				if n > math.MaxInt64/u || n < math.MinInt64/u {
					return 0, fmt.Errorf("%d × %d ns is outside the timestamps' range", n, u)
				}
				return n * u, nil
			}
		} else {
			out.Unit = u
		}
	}
	d, err := f.duration("event_time.max_out_of_orderness", et.MaxOutOfOrderness, 0)
	if err != nil {
		return out, err
	}
	if d < 0 {
		return out, f.errAt("event_time.max_out_of_orderness", "must not be negative")
	}
	out.MaxOutOfOrder = int64(d)
	if d, err = f.duration("event_time.max_ahead", et.MaxAhead, 0); err != nil {
		return out, err
	}
	if d < 0 {
		return out, f.errAt("event_time.max_ahead", "must not be negative")
	}
	out.MaxAhead = int64(d)
	return out, nil
}

// eventTimeOf returns the event time of a record computed by prog (of
// type t: a timestamp in ns, or an int64 the caller scales).
func eventTimeOf(prog *eval.Program, t core.Type) func([]core.Value) (int64, error) {
	return func(row []core.Value) (int64, error) {
		n, err := prog.EvalInt(row)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", prog.Source(), err)
		}
		return n, nil
	}
}

// sourceInput names the job's input in errors about its records: the file
// of a csv, jsonl or parquet source, else the source's kind.
func (f *File) sourceInput() string {
	k, spec, ok := sourceKinds.chosen(f.Spec.Source.sources)
	if !ok {
		return "source"
	}
	switch s := spec.(type) {
	case *CSVSpec:
		return f.path(s.Path)
	case *JSONLSpec:
		return f.path(s.Path)
	case *ParquetSpec:
		return f.path(s.Path)
	}
	return k.name
}

func (f *File) buildOps(path string, specs []OpSpec, in *core.Schema, errs *core.ErrorPolicy, reg *plan.Region) ([]core.OperatorDef, *core.Schema, error) {
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

// buildOp builds the operator of the entry at p, bound to its input in; reg
// is the region it runs in (nil in pipeline and post).
func (f *File) buildOp(p string, o *OpSpec, in *core.Schema, errs *core.ErrorPolicy, reg *plan.Region) (core.OperatorDef, error) {
	k, spec, err := opKinds.choose(f, p, o.ops, false)
	if err != nil {
		return core.OperatorDef{}, err
	}
	kp := p + "." + k.name
	name := o.Name
	if name == "" {
		name = kp
	}
	if k.keyed && (reg == nil || len(reg.Key) == 0) {
		return core.OperatorDef{}, f.errAt(kp, "%s keeps keyed state: it belongs in a region with key_by", k.name)
	}
	def, err := k.build(&opBuild{keyAt: keyAt{f, kp}, name: name, in: in, region: reg}, spec)
	if err != nil {
		if _, ok := err.(*Error); ok {
			return def, err
		}
		// The operator's errors start with its name, which is kp unless
		// the file names it.
		msg := strings.TrimPrefix(err.Error(), k.name+" "+name+": ")
		msg = strings.TrimPrefix(msg, name+": ")
		return def, f.errAt(kp, "%s", msg)
	}
	if k.keyed != (def.State != "") {
		return def, fmt.Errorf("%s: operator kind %s: a keyed operator describes its checkpointed state (OperatorDef.State), any other has none; got %q", kp, k.name, def.State)
	}
	return def, nil
}

// buildSink builds the one sink of sink:, whose records have schema in.
func (f *File) buildSink(opt Options, in *core.Schema) (core.Sink, error) {
	k, spec, err := sinkKinds.choose(f, "sink", f.Spec.Sink.sinks, true)
	if err != nil {
		return nil, err
	}
	return k.build(&sinkBuild{keyAt: keyAt{f, "sink." + k.name}, opt: opt, in: in}, spec)
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

// withMkdir wraps s in a mkdirSink that keeps s's ability to encode apart
// or to be written by parts.
func withMkdir(s core.Sink, dir, what string) core.Sink {
	m := mkdirSink{s, dir, what}
	if _, ok := s.(core.PartSink); ok {
		return mkdirPartSink{m}
	}
	if _, ok := s.(core.PositionalSink); ok {
		return mkdirPositionalSink{mkdirEncodingSink{m}}
	}
	if _, ok := s.(core.EncodingSink); ok {
		return mkdirEncodingSink{m}
	}
	return m
}

// mkdirPositionalSink is a mkdirSink around a core.PositionalSink, which it
// stays.
type mkdirPositionalSink struct{ mkdirEncodingSink }

func (m mkdirPositionalSink) Positional() bool {
	return m.Sink.(core.PositionalSink).Positional()
}

func (m mkdirPositionalSink) Positions() (int64, bool, error) {
	return m.Sink.(core.PositionalSink).Positions()
}

func (m mkdirPositionalSink) WriteAt(p []byte, off int64) error {
	return m.Sink.(core.PositionalSink).WriteAt(p, off)
}

// mkdirPartSink is a mkdirSink around a core.PartSink, which it stays.
type mkdirPartSink struct{ mkdirSink }

func (m mkdirPartSink) Parts() int                 { return m.Sink.(core.PartSink).Parts() }
func (m mkdirPartSink) Part(p int) core.PartWriter { return m.Sink.(core.PartSink).Part(p) }

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
func (f *File) buildCheckpoint(opt Options, sink core.Sink, region *plan.Region) (*plan.Checkpointing, error) {
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
	srcKind, srcSpec, _ := sourceKinds.chosen(f.Spec.Source.sources) // buildSource checked it
	if !srcKind.replayable {
		return nil, f.errAt("checkpoint", "a %s source cannot be replayed after a restore; checkpoints need a file or generator source", srcKind.name)
	}
	timeout, err := f.duration("checkpoint.timeout", c.Timeout, 10*time.Minute)
	if err != nil {
		return nil, err
	}
	if timeout <= 0 {
		return nil, f.errAt("checkpoint.timeout", "timeout must be positive")
	}
	cp := &plan.Checkpointing{Interval: interval, Timeout: timeout}
	cp.Source, cp.Sink = f.ioStates()
	dir := f.path(c.Dir)
	if opt.Validate {
		return cp, f.viewCheckpoints(dir, opt)
	}
	// Besides its files' checksums, a checkpoint to restore must have been
	// taken by this job, and the output it committed must be intact.
	fits := func(c *snapshot.Checkpoint) error {
		if err := plan.CheckRestore(&c.Meta, cp, region); err != nil {
			return err
		}
		// A source may refuse a position its settings cannot resume
		// from (a generator's count below it).
		if srcKind.fits != nil {
			if err := srcKind.fits(srcSpec, c.Meta.Sources["source"]); err != nil {
				return fmt.Errorf("%s: %w", snapshot.Name(c.Meta.ID), err)
			}
		}
		return plan.VerifyOutput(sink, c)
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
			if errors.Is(err, plan.ErrCheckpointMismatch) && mismatch == nil {
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
			opt.Info(fmt.Sprintf("restoring from %s (source position %s)", cp.Restore.Dir, plan.PositionText(cp.Restore.Meta.Sources)))
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

// DefaultRebalance is region.rebalance when a keyed region does not say
// (docs/JOB.md, "Rebalancing under key skew", says why).
const DefaultRebalance = "off"

// buildRebalance configures load balancing at the same channel count
// (plan.Rebalance) for a keyed region: off, auto, or a random-steps
// schedule (tests, demonstrations).
func (f *File) buildRebalance(s *RebalanceSpec, reg *plan.Region) error {
	if s == nil {
		if len(reg.Key) == 0 || DefaultRebalance == "off" {
			return nil
		}
		s = &RebalanceSpec{Mode: DefaultRebalance}
	}
	switch s.Mode {
	case "off", "auto":
	default:
		return f.errAt("region.rebalance", "unknown rebalance mode %q (expected off or auto)", s.Mode)
	}
	if len(reg.Key) == 0 && s.Mode != "off" {
		return f.errAt("region.rebalance", "rebalancing moves key groups: the region needs key_by")
	}
	if s.RandomEvery < 0 {
		return f.errAt("region.rebalance.random_every", "random_every must be positive (or 0 for none), not %d", s.RandomEvery)
	}
	cfg := &plan.Rebalance{Auto: s.Mode == "auto" && s.RandomEvery == 0, RandomEvery: s.RandomEvery, Seed: s.Seed}
	if t := s.TargetSkew; t != nil {
		if !(*t >= 1 && *t <= 100) {
			return f.errAt("region.rebalance.target_skew", "target_skew is max channel load / mean: between 1 and 100, not %v", *t)
		}
		cfg.TargetSkew = *t
	}
	var err error
	if cfg.Period, err = f.duration("region.rebalance.period", s.Period, time.Second); err != nil {
		return err
	}
	if cfg.Period <= 0 {
		return f.errAt("region.rebalance.period", "period must be positive, not %s", cfg.Period)
	}
	if cfg.MaxPause, err = f.duration("region.rebalance.max_pause", s.MaxPause, time.Millisecond); err != nil {
		return err
	}
	if cfg.MaxPause <= 0 {
		return f.errAt("region.rebalance.max_pause", "max_pause must be positive, not %s", cfg.MaxPause)
	}
	if s.Mode == "off" {
		return nil
	}
	reg.Rebalance = cfg
	return nil
}

// buildElastic configures live channel changes: a controller policy, or a
// seeded random schedule (tests, demonstrations). reg.Channels is the
// starting count; flagChannels > 0 says --channels set it, and an error
// about it then names the flag rather than region.channels. cores is
// Options.Cores, resolved.
func (f *File) buildElastic(e *ElasticSpec, reg *plan.Region, flagChannels, cores int) error {
	if e == nil {
		return nil
	}
	cfg := elastic.DefaultConfig()
	cfg.InitialChannels = reg.Channels
	// Counts are ≥ 0 (0: the default); a negative one used to be taken
	// silently as the default (random_every: -1 left the levels
	// controller on instead of a schedule).
	for _, c := range []struct {
		key string
		v   int
	}{
		{"min_channels", e.MinChannels},
		{"max_channels", e.MaxChannels},
		{"scale_down_periods", e.ScaleDownPeriods},
		{"random_every", e.RandomEvery},
		{"window_periods", e.WindowPeriods},
		{"cooldown_periods", e.CoolDownPeriods},
		{"drain_periods", e.DrainPeriods},
		{"memory_periods", e.MemoryPeriods},
	} {
		if c.v < 0 {
			return f.errAt("region.elastic."+c.key, "%s must be positive (or 0 for the default), not %d", c.key, c.v)
		}
	}
	period, err := f.duration("region.elastic.period", e.Period, time.Duration(cfg.PeriodNs))
	if err != nil {
		return err
	}
	if least := time.Duration(elastic.MinPeriodNs); period < least {
		return f.errAt("region.elastic.period", "period %s: expected a duration of at least %v (e.g. 1s, 500ms)", e.Period, least)
	}
	cfg.PeriodNs = int64(period)
	if e.CongestionThreshold != nil {
		if c := *e.CongestionThreshold; !(c > 0 && c < 1) {
			return f.errAt("region.elastic.congestion_threshold", "congestion_threshold %v: expected a fraction in (0, 1), e.g. 0.1", c)
		}
		cfg.CongestionThreshold = *e.CongestionThreshold
	}
	if e.Sensitivity != nil {
		if a := *e.Sensitivity; !(a > 0 && a <= 10) {
			return f.errAt("region.elastic.sensitivity", "sensitivity %v: expected a number in (0, 10], e.g. 0.5", a)
		}
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
	if e.WindowPeriods > 0 {
		cfg.WindowPeriods = e.WindowPeriods
	}
	if e.CoolDownPeriods > 0 {
		cfg.CoolDownPeriods = e.CoolDownPeriods
	}
	if e.DrainPeriods > 0 {
		cfg.DrainPeriods = e.DrainPeriods
	}
	if e.MemoryPeriods > 0 {
		cfg.MemoryPeriods = e.MemoryPeriods
	}
	if e.WarmUpPeriods != nil {
		if *e.WarmUpPeriods < 0 {
			return f.errAt("region.elastic.warmup_periods", "warmup_periods must be 0 or more, not %d", *e.WarmUpPeriods)
		}
		cfg.WarmUpPeriods = *e.WarmUpPeriods
	}
	if e.WindowStatistic != "" {
		cfg.Statistic = elastic.Statistic(e.WindowStatistic)
		switch cfg.Statistic {
		case elastic.StatMedian, elastic.StatMean, elastic.StatMin, elastic.StatMax:
		default:
			return f.errAt("region.elastic.window_statistic", "unknown window_statistic %q (expected median, mean, min or max)", e.WindowStatistic)
		}
	}
	if e.MinGain != nil {
		if g := *e.MinGain; !(g > 0 && g <= 1) {
			return f.errAt("region.elastic.min_gain", "min_gain %v: expected a fraction in (0, 1], e.g. 0.1", g)
		}
		cfg.MinGain = *e.MinGain
	}
	cfg.MaxChannels = e.MaxChannels
	if cfg.MaxChannels == 0 {
		cfg.MaxChannels = max(reg.Channels, cores-2, 1)
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
	// The starting count must lie in [min_channels, max_channels]
	// (Validate's initial_channels): said in the user's terms, at
	// region.channels or of --channels when the flag set it.
	if n := reg.Channels; n < cfg.MinChannels || n > cfg.MaxChannels {
		rel, key, bound := "more", "max_channels", cfg.MaxChannels
		if n < cfg.MinChannels {
			rel, key, bound = "fewer", "min_channels", cfg.MinChannels
		}
		at := "region.elastic." + key
		if flagChannels > 0 {
			return fmt.Errorf("--channels %d: %s than the elastic controller's %s %d (%s: %s)", n, rel, key, bound, f.where(at), at)
		}
		return f.errAt("region.channels", "%d channels: %s than the elastic controller's %s %d (%s, line %d)", n, rel, key, bound, at, f.line(at))
	}
	if err := cfg.Validate(); err != nil {
		return f.errAt("region.elastic", "%v", err)
	}
	policy := e.Policy
	if policy == "" {
		policy = "levels"
	}
	reg.Elastic = &plan.Elastic{Policy: policy, Config: cfg, DryRun: e.DryRun}
	return nil
}
