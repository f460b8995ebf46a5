package core

import "context"

// Source produces the job's input as data batches. A source is driven by
// one goroutine.
type Source interface {
	// Schema is the schema of the batches Next returns.
	Schema() *Schema
	// Next returns the next data batch, owned by the caller, with Len ≥ 1,
	// Pos set to each record's input position (row or line, 1-based) and
	// Seq, Hash and Time left zero (the runtime sets them). It returns
	// (nil, io.EOF) at the end of a finite input. A source that waits for
	// input (stdin, a rate-limited generator) returns what it has after at
	// most Linger, so that latency stays bounded; it may then return a
	// batch of fewer records. A malformed record goes through the
	// ErrorPolicy given at construction; an error Next returns stops the
	// job. Next returns ctx.Err() promptly when ctx is done.
	Next(ctx context.Context) (*Batch, error)
	// Close releases the input. Safe to call more than once.
	Close() error
}

// Linger is how long a waiting source holds a partly filled batch before
// handing it on (DESIGN.md, hot-path rule 5), in ns.
const Linger = 100_000

// Sink consumes the job's output. A sink is driven by one goroutine.
type Sink interface {
	// Open prepares the output for records of schema s (a file sink
	// creates its temporary file and writes a header).
	Open(s *Schema) error
	// Write consumes one data batch. It borrows b: the caller releases it.
	Write(b *Batch) error
	// Close completes the output: a file sink flushes, fsyncs and renames
	// its temporary file to the final name.
	Close() error
	// Abort discards the output after a failure: a file sink removes its
	// temporary file and leaves any earlier final file untouched.
	Abort()
}

// Sized is implemented by finite sources that know how many records they
// will produce (e.g. a Parquet file's row count), for progress reports.
type Sized interface {
	Size() int64
}

// Splittable is implemented by finite sources that several source workers
// can read at once, block by block (DESIGN.md, "Where the design goes
// next": splits). The input is cut into Blocks() blocks fixed by the input
// alone — Parquet row groups, generator sub-streams of a fixed record
// count — never by the number of readers or by timing, so that what a
// channel sees, consuming blocks in block order, does not depend on how
// many workers read them.
type Splittable interface {
	Source
	// Blocks is the number of blocks; it does not change. 0: this source
	// cannot be read by blocks (it is paced by a rate, or empty), and the
	// runtime reads it with Next; -1: unbounded (blocks 0, 1, 2, … until
	// the job is stopped).
	Blocks() int
	// ReadBlock reads block b (0 ≤ b < Blocks(), or any b ≥ 0 when
	// unbounded) and hands its data
	// batches, in input order, to emit, which takes ownership of each. The
	// batches are cut exactly as Next cuts them when it reads the same
	// records (no batch spans two blocks, and Next's batches end at block
	// ends too), with Pos set as Next sets it and Seq, Hash and Time zero.
	// Malformed records go through the source's ErrorPolicy as under Next.
	// An error from emit stops the read and is returned. ReadBlock may be
	// called concurrently for different blocks (from different goroutines)
	// but never concurrently with Next; it checks ctx between batches.
	ReadBlock(ctx context.Context, b int, emit func(*Batch) error) error
}

// EncodingSink is a sink whose records several goroutines can encode at
// once, while one goroutine writes the encoded bytes in output order
// (DESIGN.md: encoding in parallel, the one serial step writes bytes).
// The runtime uses it in place of Write when it runs parallel output
// workers; a sink must work both ways.
type EncodingSink interface {
	Sink
	// NewEncoder returns an encoder for the records of the schema the
	// sink was opened with. Call it after Open; each encoder is used by
	// one goroutine at a time, and several may run at once.
	NewEncoder() Encoder
	// WriteEncoded appends p, bytes made by encoders of this sink, to the
	// output. Calls come from one goroutine, in output order; p is
	// borrowed. It returns write errors as Write does.
	WriteEncoded(p []byte) error
}

// Encoder turns data batches into the bytes of an EncodingSink's format.
type Encoder interface {
	// Encode appends the encoding of every record of b to dst and returns
	// the extended slice. b is borrowed.
	Encode(dst []byte, b *Batch) []byte
}
