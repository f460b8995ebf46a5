package jobfile

import (
	"github.com/goccy/go-yaml"

	"streamd/core"
	"streamd/core/window"
)

// WindowSpec is an event-time window aggregate.
type WindowSpec struct {
	Key        []string      `yaml:"key"`
	Size       string        `yaml:"size"`
	Slide      string        `yaml:"slide"`
	Aggregates yaml.MapSlice `yaml:"aggregates"` // name: fn(arg)
	Late       string        `yaml:"late"`
}

// window: {size, slide, key, aggregates, late} aggregates per key over
// tumbling or sliding event-time windows (window.New). Keyed: its state is
// checkpointed and described by window.New.
func init() {
	registerOp(opEntry[*WindowSpec]{name: "window", rank: 60, keyed: true, build: buildWindow})
}

func buildWindow(b *opBuild, w *WindowSpec) (core.OperatorDef, error) {
	var def core.OperatorDef
	if b.f.Spec.EventTime == nil {
		return def, b.errAt("", "a window needs event time (expected event_time: with a field)")
	}
	size, err := b.f.duration(b.path+".size", w.Size, 0)
	if err != nil {
		return def, err
	}
	if size <= 0 {
		return def, b.errAt(".size", "window size must be a positive duration (e.g. 1h)")
	}
	slide, err := b.f.duration(b.path+".slide", w.Slide, 0)
	if err != nil {
		return def, err
	}
	if slide < 0 || slide > size || slide > 0 && size%slide != 0 {
		return def, b.errAt(".slide", "slide %s must be positive, at most the size %s, and divide it", slide, size)
	}
	key, err := b.groupKey(w.Key)
	if err != nil {
		return def, err
	}
	aggs, err := b.f.aggregates(b.path+".aggregates", w.Aggregates, b.in)
	if err != nil {
		return def, err
	}
	late := false
	switch w.Late {
	case "", "drop":
	case "dead_letter":
		if b.f.Spec.DeadLetterPath == "" {
			return def, b.errAt(".late", "late: dead_letter needs dead_letter_path")
		}
		late = true
	default:
		return def, b.errAt(".late", "late %q: expected drop or dead_letter", w.Late)
	}
	return window.New(window.Spec{Name: b.name, Key: key, Size: int64(size), Slide: int64(slide),
		Aggs: aggs, LateToDeadLetter: late, Groups: b.region.Groups}, b.in)
}

// groupKey is a keyed operator's grouping key: key, or the region's when
// key is empty, which must include the region's key fields.
func (b *opBuild) groupKey(key []string) ([]string, error) {
	if len(key) == 0 {
		key = b.region.Key
	}
	if err := window.CheckPartitioning(key, b.region.Key); err != nil {
		return nil, b.errAt(".key", "%v", err)
	}
	return key, nil
}
