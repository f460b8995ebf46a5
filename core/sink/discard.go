package sink

import "streamd/core"

// Discard is a sink that drops every record and counts them, like
// Benthos's `drop` output and Flink's DiscardingSink: for benchmarks and
// for jobs run for their side effects or their report. Its zero value is
// ready; it is used by the sink's one goroutine.
type Discard struct {
	// Records is the number of records written (read after the job ends).
	Records int64
}

// Open implements core.Sink.
func (d *Discard) Open(*core.Schema) error { return nil }

// Write implements core.Sink: it borrows b and only counts its records.
func (d *Discard) Write(b *core.Batch) error {
	d.Records += int64(b.Len)
	return nil
}

// Close implements core.Sink.
func (d *Discard) Close() error { return nil }

// Abort implements core.Sink.
func (d *Discard) Abort() {}

var _ core.Sink = (*Discard)(nil)
