package jobfile

import "reflect"

// Spec is the decoded job.yaml. Field tags are the keys of the file.
type Spec struct {
	Name           string          `yaml:"name"`
	OnError        string          `yaml:"on_error"`
	DeadLetterPath string          `yaml:"dead_letter_path"`
	Source         SourceSpec      `yaml:"source"`
	EventTime      *EventTimeSpec  `yaml:"event_time"`
	Pipeline       []OpSpec        `yaml:"pipeline"`
	Region         *RegionSpec     `yaml:"region"`
	Post           []OpSpec        `yaml:"post"`
	Sink           SinkSpec        `yaml:"sink"`
	Runtime        RuntimeSpec     `yaml:"runtime"`
	Checkpoint     *CheckpointSpec `yaml:"checkpoint"`
	// Determinism is determinism: strong (refuse features outside the
	// strong promise) or any (the default); see determinism.go.
	Determinism string `yaml:"determinism"`
}

// CheckpointSpec configures asynchronous barrier snapshots.
type CheckpointSpec struct {
	Dir      string `yaml:"dir"`
	Interval string `yaml:"interval"`
	Retain   int    `yaml:"retain"`
	Timeout  string `yaml:"timeout"`
}

// EventTimeSpec says where event time comes from: a field, or an
// expression over the source's fields (expr), not both.
type EventTimeSpec struct {
	Field             string `yaml:"field,omitempty"`
	Expr              string `yaml:"expr,omitempty"`
	Unit              string `yaml:"unit"`
	MaxOutOfOrderness string `yaml:"max_out_of_orderness"`
	// MaxAhead: records whose event time is further ahead than this (a
	// duration) are malformed; "" or 0 is off (plan.EventTime.MaxAhead).
	MaxAhead string `yaml:"max_ahead,omitempty"`
}

// RegionSpec is the parallel region.
type RegionSpec struct {
	Channels  *int           `yaml:"channels"`
	KeyBy     []string       `yaml:"key_by"`
	KeyGroups int            `yaml:"key_groups"`
	Ordered   *bool          `yaml:"ordered"`
	Ops       []OpSpec       `yaml:"ops"`
	Elastic   *ElasticSpec   `yaml:"elastic"`
	Rebalance *RebalanceSpec `yaml:"rebalance"`
}

// RebalanceSpec is region.rebalance (docs/JOB.md): off, auto, or a
// mapping of the settings below (mode auto unless it says off).
type RebalanceSpec struct {
	Mode       string   `yaml:"mode"` // off | auto
	TargetSkew *float64 `yaml:"target_skew"`
	Period     string   `yaml:"period"`
	MaxPause   string   `yaml:"max_pause"`
	// RandomEvery, for tests and demonstrations: a step moving 1–8 random
	// key groups every random_every source batches (seeded), whatever the
	// load.
	RandomEvery int    `yaml:"random_every"`
	Seed        uint64 `yaml:"seed"`
}

// rebalanceFields is RebalanceSpec without its decoder.
type rebalanceFields RebalanceSpec

// UnmarshalYAML takes the scalar form (off, auto) or the mapping.
func (r *RebalanceSpec) UnmarshalYAML(unmarshal func(any) error) error {
	var mode string
	if err := unmarshal(&mode); err == nil {
		*r = RebalanceSpec{Mode: mode}
		return nil
	}
	var f rebalanceFields
	if err := unmarshal(&f); err != nil {
		return err
	}
	*r = RebalanceSpec(f)
	if r.Mode == "" {
		r.Mode = "auto"
	}
	return nil
}

// ElasticSpec configures live channel changes (docs/JOB.md).
type ElasticSpec struct {
	Policy              string   `yaml:"policy"` // levels | ds2 | off
	DryRun              bool     `yaml:"dry_run"`
	Period              string   `yaml:"period"`
	CongestionThreshold *float64 `yaml:"congestion_threshold"`
	Sensitivity         *float64 `yaml:"sensitivity"`
	FastScaling         *bool    `yaml:"fast_scaling"`
	MinChannels         int      `yaml:"min_channels"`
	MaxChannels         int      `yaml:"max_channels"`
	ScaleDownPeriods    int      `yaml:"scale_down_periods"`
	// The decision window, cool-down, gain rule and memory (elastic.Config;
	// docs/JOB.md explains each and its default).
	WindowPeriods   int      `yaml:"window_periods"`
	WindowStatistic string   `yaml:"window_statistic"`
	CoolDownPeriods int      `yaml:"cooldown_periods"`
	WarmUpPeriods   *int     `yaml:"warmup_periods"`
	DrainPeriods    int      `yaml:"drain_periods"`
	MinGain         *float64 `yaml:"min_gain"`
	MemoryPeriods   int      `yaml:"memory_periods"`
	// Random, for tests and demonstrations: change to a random channel
	// count in [min_channels, max_channels] every random_every batches
	// (seeded).
	RandomEvery int    `yaml:"random_every"`
	Seed        uint64 `yaml:"seed"`
}

// OpSpec is an entry of pipeline, region.ops or post: exactly one operator,
// under its kind's key (the registry's operator kinds: filter, window, …),
// and optionally the operator's name.
type OpSpec struct {
	Name string
	ops  choice
}

// UnmarshalYAML decodes the entry into the operator registry's shape.
func (o *OpSpec) UnmarshalYAML(unmarshal func(any) error) error {
	c, err := opKinds.decode(unmarshal)
	if err != nil {
		return err
	}
	o.Name, o.ops = c.v.Field(0).String(), c
	return nil
}

func (OpSpec) yamlShape() reflect.Type { return opKinds.shapeType() }

// SourceSpec holds exactly one source, under its kind's key (the
// registry's source kinds: csv, parquet, …), and optionally parallelism:
// how many source workers read it at once (plan.Job.SourceParallelism;
// 0, the default, lets the engine choose).
type SourceSpec struct{ sources choice }

// Parallelism is source.parallelism (0 when absent).
func (s SourceSpec) Parallelism() int {
	if !s.sources.v.IsValid() {
		return 0
	}
	return int(s.sources.v.Field(0).Int())
}

// UnmarshalYAML decodes source: into the source registry's shape.
func (s *SourceSpec) UnmarshalYAML(unmarshal func(any) error) error {
	c, err := sourceKinds.decode(unmarshal)
	s.sources = c
	return err
}

func (SourceSpec) yamlShape() reflect.Type { return sourceKinds.shapeType() }

// SinkSpec holds exactly one sink, under its kind's key (the registry's
// sink kinds: csv, jsonl, …).
type SinkSpec struct{ sinks choice }

// UnmarshalYAML decodes sink: into the sink registry's shape.
func (s *SinkSpec) UnmarshalYAML(unmarshal func(any) error) error {
	c, err := sinkKinds.decode(unmarshal)
	s.sinks = c
	return err
}

func (SinkSpec) yamlShape() reflect.Type { return sinkKinds.shapeType() }

// shaped is implemented by the Spec types whose keys come from a registry
// (OpSpec, SourceSpec, SinkSpec): yamlShape is the struct type their
// mapping decodes into, which the checks that walk the document beside
// the Spec types (keysAt, checkIntegers) walk instead.
type shaped interface{ yamlShape() reflect.Type }

// yamlType is the struct (or other) type a value of type t is decoded as:
// t without pointers, or its shape.
func yamlType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(reflect.TypeFor[shaped]()) {
		return reflect.Zero(t).Interface().(shaped).yamlShape()
	}
	return t
}

// RuntimeSpec tunes the runtime.
type RuntimeSpec struct {
	RingSize int   `yaml:"ring_size"`
	Pin      *bool `yaml:"pin"`
	// OutputWorkers is plan.Job.OutputParallelism: 0 (the default)
	// lets the engine choose, 1 … 256 sets it.
	OutputWorkers int `yaml:"output_workers"`
	// BufferTarget is plan.Job.BufferTarget: a positive duration, "off",
	// or "" (the default: a quarter of checkpoint.interval, at most 1 s).
	BufferTarget string `yaml:"buffer_target"`
	// BatchLinger is plan.Job.BatchLinger: a positive duration up to
	// 1 s, "off", or "" (the default: plan.DefaultBatchLinger).
	BatchLinger string `yaml:"batch_linger"`
}
