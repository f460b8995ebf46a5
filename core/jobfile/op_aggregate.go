package jobfile

import (
	"github.com/goccy/go-yaml"

	"streamd/core"
	"streamd/core/window"
)

// AggregateSpec is a keyed running aggregate without windows.
type AggregateSpec struct {
	Key        []string      `yaml:"key"`
	Aggregates yaml.MapSlice `yaml:"aggregates"`
}

// aggregate: {key, aggregates} keeps running aggregates per key, without
// windows: for every record, its key and the key's aggregates so far
// (window.NewRunning). Keyed: its
// state is checkpointed and described by window.NewRunning.
func init() {
	registerOp(opEntry[*AggregateSpec]{name: "aggregate", rank: 70, keyed: true, build: buildAggregate})
}

func buildAggregate(b *opBuild, a *AggregateSpec) (core.OperatorDef, error) {
	key, err := b.groupKey(a.Key)
	if err != nil {
		return core.OperatorDef{}, err
	}
	aggs, err := b.f.aggregates(b.path+".aggregates", a.Aggregates, b.in)
	if err != nil {
		return core.OperatorDef{}, err
	}
	return window.NewRunning(window.RunningSpec{Name: b.name, Key: key, Aggs: aggs, Groups: b.region.Groups}, b.in)
}
