package core

import (
	"context"
	"errors"
)

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
	// job. Next returns ctx.Err() promptly when ctx is done. A live
	// source may return (nil, ErrIdle) when it has waited a while and
	// nothing arrived.
	Next(ctx context.Context) (*Batch, error)
	// Close releases the input. Safe to call more than once.
	Close() error
}

// Linger is how long a waiting source holds a partly filled batch before
// handing it on (docs/ARCHITECTURE.md, "Hot-path rules", 5), in ns.
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

// Lagging is implemented by sources that know how far behind their input
// they are: a rate-limited generator's records due by now but not yet
// handed over, a consumer's lag behind its log. The runtime adds it to the
// records waiting in the splitter's rings to make the region's backlog
// (elastic.Counters.Backlog), read once per adaptation period.
type Lagging interface {
	// Lag is the number of records available or due now that Next has not
	// yet returned; 0 when caught up or unknown. It is called on the
	// goroutine that calls Next, between calls.
	Lag() int64
}

// Splittable is implemented by sources whose input divides into blocks
// that several source workers can read at once (docs/ARCHITECTURE.md,
// "Parallel sources and the M×N exchange"): the row groups of a Parquet
// file, the sub-streams of a seeded generator, byte ranges of a CSV or
// JSON-lines file.
//
// Blocks are fixed by the input alone — never by the number of readers,
// timing or sizes chosen at run time: block b's records are exactly the
// records a fresh sequential read (Next) returns after those of blocks
// 0 … b-1, in the same order, with the same values and Pos, cut into the
// same batches (no batch of Next spans two blocks). So a reader that hands
// blocks out round-robin to M workers and consumes them back in block
// order sees the same records in the same batches, and so the same
// watermarks, for any M.
type Splittable interface {
	Source
	// Blocks is the number of blocks, numbered 0 … Blocks()-1; -1 if the
	// input is unbounded (every block b ≥ 0 exists); 0 if this source
	// cannot keep the promise above now (a rate-limited generator, whose
	// batches follow the clock) or is empty: the runtime then reads it
	// with Next. It is constant for the source's life.
	Blocks() int
	// ReadBlock reads block b and hands its records to emit, in order, in
	// data batches shaped as Next's (Len ≥ 1, Pos set, Seq, Hash and Time
	// left zero). emit takes ownership of each batch; if emit returns an
	// error, ReadBlock stops and returns it unchanged. Malformed records go
	// to errs (the runtime's per-worker ErrorPolicy.Deferred, whose dead
	// letters it writes in block order), or, when errs is nil, through the
	// source's own policy as under Next. ReadBlock returns nil
	// after the block's last record, an error naming the block if b is out
	// of range, and ctx.Err() promptly when ctx is done (some of the block
	// may have been emitted).
	//
	// Concurrency: ReadBlock is safe to call concurrently for different
	// blocks. It does not move Next's position: a source is read either by
	// Next or by blocks, not both. Close is called after every ReadBlock
	// has returned.
	ReadBlock(ctx context.Context, b int, errs *ErrorPolicy, emit func(*Batch) error) error
}

// EncodingSink is a sink whose records several goroutines can encode at
// once, while one goroutine writes the encoded bytes in output order
// (docs/ARCHITECTURE.md, "Parallel output": encoding in parallel, the one
// serial step writes bytes).
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

// PositionalSink is an EncodingSink whose encoded bytes several goroutines
// can write at once, each at the offset the runtime gives it, so that no
// one goroutine writes all the bytes (a regular file). The runtime works
// out each piece's offset in output order and has the goroutine that
// encoded it write it.
type PositionalSink interface {
	EncodingSink
	// Positional says whether Positions can switch this sink outside
	// exactly-once mode (a file: yes; standard output: no). Callable
	// before Open.
	Positional() bool
	// Positions switches the sink to positional writes: it writes out
	// what it buffered (the header) and returns the offset the encoded
	// bytes start at. ok is false where the sink cannot (standard output,
	// exactly-once epochs): the runtime then uses WriteEncoded. After a
	// successful switch only WriteAt, Close and Abort may be called.
	Positions() (start int64, ok bool, err error)
	// WriteAt writes p at offset off. Safe for concurrent use; p is
	// borrowed. Pieces may arrive in any order; Close commits the file
	// once every piece was written.
	WriteAt(p []byte, off int64) error
}

// PartSink is a sink whose output is Parts() files written side by side,
// part p by one goroutine through Part(p), with no serial step after the
// merge. Which records a part gets is the runtime's rule, not the sink's
// (docs/ARCHITECTURE.md, "Parts"); the sink only keeps each part's records
// in the order they are written. The runtime never calls Write on it.
// Open, Close and Abort cover every part.
type PartSink interface {
	Sink
	// Parts is the number of parts (≥ 1), constant for the sink's life.
	Parts() int
	// Part returns part p's writer (0 ≤ p < Parts()). Call it after Open;
	// each writer is used by one goroutine at a time, and several run at
	// once. Its Write borrows the batch, ignores markers, and returns
	// write errors as Sink.Write does.
	Part(p int) PartWriter
}

// PartWriter writes the records of one part of a PartSink.
type PartWriter interface {
	Write(b *Batch) error
}

// Encoder turns data batches into the bytes of an EncodingSink's format.
type Encoder interface {
	// Encode appends the encoding of every record of b to dst and returns
	// the extended slice. b is borrowed.
	Encode(dst []byte, b *Batch) []byte
}

// BlockStarts is implemented by Splittable sources that know, without
// reading, the input position at which each block starts: the number of
// records (rows, generated records) before block b. A checkpoint taken at
// a block boundary records it as the source's position too.
type BlockStarts interface {
	BlockStart(b int) int64
}

// ErrIdle is returned by a live source's Next (a followed or watched file)
// when it has waited one poll interval and no record arrived: not a
// failure and not the end; the caller may call Next again. It lets the
// goroutine that drives the source act while the input is idle: the
// source stage injects a checkpoint barrier that is due, so that a
// checkpoint completes while no new data arrives.
var ErrIdle = errors.New("no input yet")

// Interleaved is implemented by a Splittable source that is the union of
// several inputs read as a block interleave (source.Union;
// docs/ARCHITECTURE.md, "Determinism"): its blocks are block 0 of input 0,
// block 0 of input 1, …, then block 1 of each input that has one, and so
// on, skipping exhausted inputs. The runtime keeps a watermark per input
// for it: after each batch the watermark is the minimum, over the inputs
// still being read (those with a block at or after the batch's), of each
// input's largest event time so far, less the bound.
//
// A record of block b has Pos b<<PosFileShift | its line or row in its own
// file (PosLine): positions sort in interleave order, and the block (so
// the input) of a batch is Pos[0]>>PosFileShift, which the runtime reads
// once per batch.
type Interleaved interface {
	Splittable
	// Inputs is the number of inputs (≥ 1).
	Inputs() int
	// BlockInput is the input block b (0 ≤ b < Blocks()) belongs to.
	BlockInput(b int) int
	// LastBlock is the last block of input i in the interleave; -1 if the
	// input has no block.
	LastBlock(i int) int
}
