package perf

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"
	"time"

	"streamd/core/jobfile"
	"streamd/core/plan"
	"streamd/core/runtime"
	"streamd/core/sink"
	"streamd/core/source"
)

func init() {
	Register(Workload{
		Name:        "pipeline",
		Description: "generator → map (3 expressions) → discard; --channels N puts the map in a stateless region of N channels",
		Build:       buildPipeline,
	})
	Register(Workload{
		Name:        "keyed",
		Description: "generator with Zipf(1.1) keys over 100,000 keys → keyed 100 ms tumbling window (count, sum, max) → discard; 2 channels by default",
		Build:       buildKeyed,
	})
	Register(Workload{
		Name:        "flights",
		Description: "examples/flights/job.yaml (3 M flights from Parquet, hourly window per origin, airport lookup) → discard; needs --data or STREAMD_DATA",
		Build:       buildFlights,
	})
	Register(Workload{
		Name:        "elastic",
		Description: "examples/elastic/job.yaml with a short step schedule (rate R, 4R from duration/3, R from 2·duration/3; R = --rate or 500,000; windows fire 10×/s at R) → discard",
		Build:       buildElastic,
		Mode:        elasticMode,
	})
}

var genJob = template.Must(template.New("job").Parse(`name: {{.Name}}
source:
  generator:
    seed: {{.Seed}}
    count: {{.Count}}
    rate: {{.Rate}}
    keys: {{.Keys}}
{{- if .Zipf}}
    distribution: zipf
    zipf_s: 1.1
{{- end}}
    step: 1us
    start: 2026-01-01T00:00:00Z
{{- if .Window}}
event_time:
  field: ts
{{- end}}
{{- if not .Region}}
pipeline:
{{.Ops}}
{{- else}}
region:
  channels: {{.Channels}}
{{- if .Window}}
  key_by: [key]
{{- end}}
  ops:
{{.Ops}}
{{- end}}
sink:
  csv:
    path: discard.csv
`))

const mapOps = `    - map:
        a: (value * 31 + seq % 97) % 1009
        b: "value > 500 ? value - 500 : value + 500"
        c: (seq * 2654435761) % 1000003`

const windowOps = `    - window:
        size: 100ms
        aggregates:
          n: count
          total: sum(value)
          top: max(value)`

type genSpec struct {
	Name         string
	Seed         uint64
	Count        int64
	Rate         float64
	Keys         int
	Zipf, Window bool
	Region       bool
	Channels     int
	Ops          string
}

// buildGen builds a generator job from genJob and swaps its sink for
// sink.Discard.
func buildGen(g genSpec) (*plan.Job, error) {
	var buf bytes.Buffer
	if err := genJob.Execute(&buf, g); err != nil {
		return nil, err
	}
	f, err := jobfile.Parse(g.Name+".yaml", buf.Bytes())
	if err != nil {
		return nil, err
	}
	job, err := f.Build(jobfile.Options{Cores: runtime.UsableCores()})
	if err != nil {
		return nil, err
	}
	job.Sink = &sink.Discard{}
	return job, nil
}

func buildPipeline(opt Options) (*plan.Job, error) {
	return buildGen(genSpec{Name: "pipeline", Seed: opt.Seed, Count: opt.Count, Rate: opt.Rate, Keys: 1000,
		Region: opt.Channels > 0, Channels: opt.Channels, Ops: mapOps})
}

func buildKeyed(opt Options) (*plan.Job, error) {
	ch := opt.Channels
	if ch == 0 {
		ch = 2
	}
	return buildGen(genSpec{Name: "keyed", Seed: opt.Seed, Count: opt.Count, Rate: opt.Rate, Keys: 100_000,
		Zipf: true, Window: true, Region: true, Channels: ch, Ops: windowOps})
}

// exampleJob loads examples/<name>/job.yaml from the repository (found
// from the working directory up), with STREAMD_DATA set to opt.DataDir if
// given, and builds it with opt.Channels, its sink swapped for Discard.
func exampleJob(name string, opt Options) (*plan.Job, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	if opt.DataDir != "" {
		abs, err := filepath.Abs(opt.DataDir)
		if err != nil {
			return nil, err
		}
		os.Setenv("STREAMD_DATA", abs)
	}
	f, err := jobfile.Load(filepath.Join(root, "examples", name, "job.yaml"))
	if err != nil {
		return nil, err
	}
	job, err := f.Build(jobfile.Options{Channels: opt.Channels, Cores: runtime.UsableCores()})
	if err != nil {
		return nil, err
	}
	job.Sink = &sink.Discard{}
	return job, nil
}

// repoRoot is the nearest directory, from the working directory up, that
// holds examples/flights/job.yaml.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "examples", "flights", "job.yaml")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("no examples/ directory in the working directory or above it (run from the streamd repository)")
		}
		dir = up
	}
}

func buildFlights(opt Options) (*plan.Job, error) {
	if opt.Rate > 0 || opt.Count > 0 {
		return nil, fmt.Errorf("flights reads a file: --rate and --count do not apply")
	}
	return exampleJob("flights", opt)
}

// elasticSteps is elastic's rate schedule under opt: R, 4R from a third
// of the run, R from two thirds (R = opt.Rate or 500,000; the run taken as
// 6 s without a duration).
func elasticSteps(opt Options) []source.RateStep {
	d := opt.Duration
	if d <= 0 {
		d = 6 * time.Second
	}
	low := opt.Rate
	if low <= 0 {
		low = 500_000
	}
	return []source.RateStep{{At: 0, Rate: low}, {At: d / 3, Rate: 4 * low}, {At: 2 * d / 3, Rate: low}}
}

// elasticMode describes elastic's schedule: "open loop, steps R → 4R → R
// records/s at 0s, D/3, 2D/3".
func elasticMode(opt Options) string {
	steps := elasticSteps(opt)
	rates := make([]string, len(steps))
	at := make([]string, len(steps))
	for i, s := range steps {
		rates[i] = fmt.Sprintf("%.0f", s.Rate)
		at[i] = s.At.Round(time.Millisecond).String()
	}
	return fmt.Sprintf("open loop, steps %s records/s at %s", strings.Join(rates, " → "), strings.Join(at, ", "))
}

func buildElastic(opt Options) (*plan.Job, error) {
	job, err := exampleJob("elastic", opt)
	if err != nil {
		return nil, err
	}
	steps := elasticSteps(opt)
	low := steps[0].Rate
	seed := opt.Seed
	if seed == 0 {
		seed = 11
	}
	// The file's own schedule (steps at 10 s and 25 s) is too long for a
	// benchmark run: the same generator, with steps at thirds of the run,
	// and an event-time step such that the 1-minute windows fire ten
	// times a second at the base rate (the file's 1 µs would fire none in
	// a short run, and latency needs output).
	job.Source.Close()
	job.Source, err = source.Generator(source.GeneratorOptions{
		Seed: seed, Count: opt.Count, Keys: 100_000, Step: int64(time.Minute) / int64(max(low/10, 1)),
		Start:     time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano(),
		RateSteps: steps,
	})
	if err != nil {
		return nil, err
	}
	return job, nil
}
