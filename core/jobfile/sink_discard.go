package jobfile

import (
	"streamd/core"
	"streamd/core/sink"
)

// DiscardSinkSpec drops the records (Benthos's `drop`): the report still
// counts them. It has no options.
type DiscardSinkSpec struct{}

// discard: drops the records (sink.Discard).
func init() {
	registerSink(sinkEntry[DiscardSinkSpec]{name: "discard", rank: 40,
		build: func(*sinkBuild, *DiscardSinkSpec) (core.Sink, error) { return &sink.Discard{}, nil }})
}
