package nexmark

import "streamd/core"

// Discard is a sink that counts records and drops them: the queries'
// sink, so that measurements see the engine, not an output format.
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
