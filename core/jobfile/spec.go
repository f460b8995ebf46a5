package jobfile

import "github.com/goccy/go-yaml"

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
}

// CheckpointSpec configures asynchronous barrier snapshots.
type CheckpointSpec struct {
	Dir      string `yaml:"dir"`
	Interval string `yaml:"interval"`
	Retain   int    `yaml:"retain"`
	Timeout  string `yaml:"timeout"`
}

// SourceSpec holds exactly one source.
type SourceSpec struct {
	Parquet   *ParquetSpec   `yaml:"parquet"`
	CSV       *CSVSpec       `yaml:"csv"`
	JSONL     *JSONLSpec     `yaml:"jsonl"`
	Stdin     *StdinSpec     `yaml:"stdin"`
	Generator *GeneratorSpec `yaml:"generator"`
	// Parallelism is how many source workers read the source at once
	// (runtime.Job.SourceParallelism): 0 (the default) lets the engine
	// choose, 1 … 256 sets it.
	Parallelism int `yaml:"parallelism"`
}

// ParquetSpec reads a Parquet file.
type ParquetSpec struct {
	Path    string   `yaml:"path"`
	Columns []string `yaml:"columns"`
}

// CSVSpec reads a CSV file.
type CSVSpec struct {
	Path      string        `yaml:"path"`
	Header    *bool         `yaml:"header"`
	Delimiter string        `yaml:"delimiter"`
	Columns   yaml.MapSlice `yaml:"columns"` // name: type, in file order
	// Parallelism is the number of goroutines parsing the file: 0 (the
	// default) is auto, 1 the sequential reader (source.CSVOptions).
	Parallelism int `yaml:"parallelism"`
}

// JSONLSpec reads JSON lines.
type JSONLSpec struct {
	Path   string        `yaml:"path"`
	Fields yaml.MapSlice `yaml:"fields"` // name: type
}

// StdinSpec reads standard input.
type StdinSpec struct {
	Format    string        `yaml:"format"` // csv | jsonl
	Header    *bool         `yaml:"header"`
	Delimiter string        `yaml:"delimiter"`
	Fields    yaml.MapSlice `yaml:"fields"` // name: type
}

// GeneratorSpec generates records (seq, key, value, ts).
type GeneratorSpec struct {
	Seed         uint64  `yaml:"seed"`
	Count        int64   `yaml:"count"`
	Rate         float64 `yaml:"rate"`
	Keys         int     `yaml:"keys"`
	Distribution string  `yaml:"distribution"`
	ZipfS        float64 `yaml:"zipf_s"`
	Start        string  `yaml:"start"`
	Step         string  `yaml:"step"`
	// RateSteps: a load that steps up and down, e.g.
	// [{at: 0s, rate: 1000000}, {at: 20s, rate: 4000000}].
	RateSteps []RateStepSpec `yaml:"rate_steps"`
}

// RateStepSpec is one step of a generator's rate schedule.
type RateStepSpec struct {
	At   string  `yaml:"at"`
	Rate float64 `yaml:"rate"`
}

// EventTimeSpec says where event time comes from.
type EventTimeSpec struct {
	Field             string `yaml:"field"`
	Unit              string `yaml:"unit"`
	MaxOutOfOrderness string `yaml:"max_out_of_orderness"`
}

// RegionSpec is the parallel region.
type RegionSpec struct {
	Channels  *int         `yaml:"channels"`
	KeyBy     []string     `yaml:"key_by"`
	KeyGroups int          `yaml:"key_groups"`
	Ordered   *bool        `yaml:"ordered"`
	Ops       []OpSpec     `yaml:"ops"`
	Elastic   *ElasticSpec `yaml:"elastic"`
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
	// Random, for tests and demonstrations: change to a random channel
	// count in [min_channels, max_channels] every random_every batches
	// (seeded).
	RandomEvery int    `yaml:"random_every"`
	Seed        uint64 `yaml:"seed"`
}

// OpSpec holds exactly one operator, and optionally its name.
type OpSpec struct {
	Name       string          `yaml:"name"`
	Filter     *string         `yaml:"filter"`
	Map        yaml.MapSlice   `yaml:"map"` // name: expression
	Project    []string        `yaml:"project"`
	LookupCSV  *LookupCSVSpec  `yaml:"lookup_csv"`
	LookupHTTP *LookupHTTPSpec `yaml:"lookup_http"`
	Window     *WindowSpec     `yaml:"window"`
	Aggregate  *AggregateSpec  `yaml:"aggregate"`
}

// LookupCSVSpec joins with a CSV table.
type LookupCSVSpec struct {
	Path     string   `yaml:"path"`
	Key      string   `yaml:"key"`
	TableKey string   `yaml:"table_key"`
	Fields   []string `yaml:"fields"` // "column" or "column as name"
	OnMiss   string   `yaml:"on_miss"`
}

// LookupHTTPSpec joins with an HTTP JSON endpoint behind a cache.
type LookupHTTPSpec struct {
	URL       string        `yaml:"url"`
	Key       string        `yaml:"key"`
	Fields    yaml.MapSlice `yaml:"fields"` // name: type
	TTL       string        `yaml:"ttl"`
	MaxCost   int64         `yaml:"max_cost"`
	Timeout   string        `yaml:"timeout"`
	OnMiss    string        `yaml:"on_miss"`
	CacheKeys int64         `yaml:"cache_counters"`
}

// WindowSpec is an event-time window aggregate.
type WindowSpec struct {
	Key        []string      `yaml:"key"`
	Size       string        `yaml:"size"`
	Slide      string        `yaml:"slide"`
	Aggregates yaml.MapSlice `yaml:"aggregates"` // name: fn(arg)
	Late       string        `yaml:"late"`
}

// AggregateSpec is a keyed running aggregate without windows.
type AggregateSpec struct {
	Key        []string      `yaml:"key"`
	Aggregates yaml.MapSlice `yaml:"aggregates"`
}

// SinkSpec holds exactly one sink.
type SinkSpec struct {
	CSV     *CSVSinkSpec     `yaml:"csv"`
	JSONL   *JSONLSinkSpec   `yaml:"jsonl"`
	Stdout  *StdoutSpec      `yaml:"stdout"`
	Discard *DiscardSinkSpec `yaml:"discard"`
}

// DiscardSinkSpec drops the records (Benthos's `drop`): the report still
// counts them. It has no options.
type DiscardSinkSpec struct{}

// CSVSinkSpec writes a CSV file.
type CSVSinkSpec struct {
	Path      string `yaml:"path"`
	Header    *bool  `yaml:"header"`
	Delimiter string `yaml:"delimiter"`
}

// JSONLSinkSpec writes JSON lines.
type JSONLSinkSpec struct {
	Path string `yaml:"path"`
}

// StdoutSpec writes to standard output.
type StdoutSpec struct {
	Format string `yaml:"format"` // csv | jsonl
}

// RuntimeSpec tunes the runtime.
type RuntimeSpec struct {
	RingSize int   `yaml:"ring_size"`
	Pin      *bool `yaml:"pin"`
	// OutputWorkers is runtime.Job.OutputParallelism: 0 (the default)
	// lets the engine choose, 1 … 256 sets it.
	OutputWorkers int `yaml:"output_workers"`
}
