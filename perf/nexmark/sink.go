package nexmark

import "streamd/core/sink"

// Discard is the queries' sink (core/sink.Discard: it counts records and
// drops them), so that measurements see the engine, not an output format.
type Discard = sink.Discard
