package jobfile

import (
	"fmt"
	"time"

	"streamd/core"
	"streamd/core/source"
)

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

// generator: {seed, count, rate, …} generates records (source.Generator).
// A restored run may change its count and rate, but not to a count below
// the checkpoint's position.
func init() {
	registerSource(sourceEntry[GeneratorSpec]{name: "generator", rank: 50, replayable: true,
		build: buildGenerator, describe: describeGenerator, fits: generatorFits})
}

func buildGenerator(b *sourceBuild, g *GeneratorSpec) (core.Source, error) {
	opts := source.GeneratorOptions{Seed: g.Seed, Count: g.Count, Rate: g.Rate, Keys: g.Keys, Distribution: g.Distribution, ZipfS: g.ZipfS}
	if g.Start != "" {
		var err error
		if opts.Start, err = core.ParseTime(g.Start); err != nil {
			return nil, b.errAt(".start", "%v", err)
		}
	}
	step, err := b.f.duration(b.path+".step", g.Step, 0)
	if err != nil {
		return nil, err
	}
	opts.Step = int64(step)
	for i, st := range g.RateSteps {
		p := fmt.Sprintf("%s.rate_steps[%d]", b.path, i)
		at, err := b.f.duration(p+".at", st.At, 0)
		if err != nil {
			return nil, err
		}
		opts.RateSteps = append(opts.RateSteps, source.RateStep{At: at, Rate: st.Rate})
	}
	s, err := source.Generator(opts)
	if err != nil {
		return nil, b.errAt("", "%v", err)
	}
	return s, nil
}

// generatorRecords names how the generator makes records: "counter" since
// 2026-12-01 (record i a pure function of the seed and i). A checkpoint of
// the earlier, sequential generator does not have it, so a restore into
// this one is refused as another source instead of resuming with other
// records.
const generatorRecords = "counter"

// describedGenerator is what a checkpoint records for a generator.
type describedGenerator struct {
	GeneratorSpec `yaml:",inline"`
	Records       string `yaml:"records"`
}

// describeGenerator leaves out the count and the rate, and writes the
// defaults out and the durations by value (1ms = 1000us), and the record
// algorithm.
func describeGenerator(g GeneratorSpec) any {
	return describedGenerator{describeGeneratorSpec(g), generatorRecords}
}

func describeGeneratorSpec(g GeneratorSpec) GeneratorSpec {
	g.Count, g.Rate, g.RateSteps = 0, 0, nil
	if g.Keys == 0 {
		g.Keys = 1000
	}
	if g.Distribution == "" {
		g.Distribution = "uniform"
	}
	if g.ZipfS == 0 {
		g.ZipfS = 1.1
	}
	g.Step = durationValue(g.Step, time.Millisecond)
	if t, err := core.ParseTime(g.Start); err == nil && g.Start != "" {
		g.Start = time.Unix(0, t).UTC().Format(time.RFC3339Nano)
	} else if g.Start == "" {
		g.Start = time.Unix(0, 0).UTC().Format(time.RFC3339Nano)
	}
	return g
}

// generatorFits refuses a checkpoint position beyond the count: the
// replay would end before it (an older checkpoint may do).
func generatorFits(g *GeneratorSpec, position int64) error {
	if g.Count > 0 && position > g.Count {
		return fmt.Errorf("the generator's count %d is below the checkpoint's position %d", g.Count, position)
	}
	return nil
}
