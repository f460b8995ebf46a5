package source

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"

	"streamd/core"
)

// csvBlockSize is the size of the blocks a parallel CSV source cuts its file
// into, in bytes. A block grows past it only to hold a record longer than
// it. Parsing a block takes milliseconds, so the cost per block (a channel
// send each way, an encoding/csv Reader) is well under 1 %; larger blocks
// only hold more memory in flight: the peers job (perf/peers, 3 M records,
// 2 workers) peaks at 113 MB RSS with 1 MiB blocks, 73 MB with 256 KiB, in
// the same time.
const csvBlockSize = 256 << 10

// csvParallelism resolves CSVOptions.Parallelism: 0 is min(4, usable CPUs).
func csvParallelism(n int) int {
	if n != 0 {
		return n
	}
	return min(4, runtime.GOMAXPROCS(0))
}

// csvParallel is a CSV file source whose records are parsed by k worker
// goroutines:
//
//   - A reader goroutine reads the file (after the header) in blocks of
//     about blockSize bytes and cuts each at its last record boundary
//     (recordCut); the rest carries into the next block. It counts each
//     block's '\n's, so each block knows the line it starts on.
//   - Block i goes to worker i mod k, which parses it with an encoding/csv
//     reader of its own (the options and checks of the sequential reader,
//     interners of its own) into pooled batches, Pos = the block's first
//     line + the local line − 1. A malformed record ends the batch being
//     filled and is kept, in order, as an item of the block's result; the
//     worker never calls the ErrorPolicy.
//   - Next takes block i's result from worker i mod k (each worker keeps its
//     results in order; its channel holds one), reports the malformed
//     records to the ErrorPolicy, in file order, from the calling
//     goroutine, and hands the records on in full batches, as the
//     sequential reader does (copying where a worker's batch ended early).
//
// So the records, their order, their Pos, the batches they come in and the
// ErrorPolicy calls are those of the sequential reader. The parity cut is exact only for
// well-formed quoting: when a worker meets a quoting error (a
// csv.ParseError or an unclosed quote) in block i, or the reader a read error, Next stops the
// goroutines when it reaches block i and reads the rest of the file from
// block i's start with the sequential reader, whose results are then the
// sequential ones by construction.
//
// Memory: at most 2k+1 blocks are in flight (one filling in the reader, per
// worker one queued and one parsing) and the batches of at most 2k+1 parsed
// blocks (per worker one queued and one filling, and the one Next is handing
// out); a parsed block takes about 24 bytes per field of its records.
type csvParallel struct {
	schema    *core.Schema
	input     string
	f         *os.File
	bt        *blockText // the file's blocks: ReadBlock, the fall-back
	seq       *csvReader // the header's reader: its columns, and the fallback
	errs      *core.ErrorPolicy
	k         int
	blockSize int
	off, line int64 // where the records start: file offset, 1-based line

	started bool
	done    chan struct{} // closed to stop the goroutines
	wg      sync.WaitGroup
	work    []chan *csvBlock  // per worker, from the reader
	results []chan *csvResult // per worker, to Next
	free    chan []byte       // block buffers to reuse

	block  int         // index of the next block's result
	cur    *csvResult  // the block Next is handing out
	src    *core.Batch // a worker's batch Next is copying from, from srcPos
	srcPos int
	out    *core.Batch // the batch Next is filling
	fall   *blockText  // after a quoting error: p.bt, read on by Next
	// fallEnd: fall's last batch ended a block; pull says so next.
	fallEnd bool
	eof     bool
	shut    bool // goroutines stopped
	closed  bool
}

// csvBlock is a block of whole records on its way to a worker, or (redo)
// the point where the reader could not go on.
type csvBlock struct {
	buf  []byte
	off  int64 // file offset of buf[0]
	line int64 // line of buf[0], 1-based
	end  bool  // buf ends where a block of bt starts
	redo bool
}

// csvResult is a parsed block: its batches and malformed records in file
// order, or (redo) the instruction to read on sequentially from off, line.
type csvResult struct {
	items     []csvItem
	off, line int64
	end       bool // a block of bt ends here: Next ends its batch
	redo      bool
}

// csvItem is a batch or a malformed record.
type csvItem struct {
	b   *core.Batch
	bad *badRecord
}

func (r *csvResult) release() {
	for i := range r.items {
		r.items[i].b.Release()
		r.items[i] = csvItem{}
	}
	r.items = r.items[:0]
}

// newCSVParallel returns a parallel source over the file of bt, whose
// records start at offset off on line line; c has read the header.
func newCSVParallel(bt *blockText, c *csvReader, off, line int64, k, blockSize int) *csvParallel {
	return &csvParallel{schema: c.schema, input: c.input, f: bt.f, bt: bt, seq: c, errs: c.errs,
		k: k, blockSize: blockSize, off: off, line: line}
}

func (p *csvParallel) Schema() *core.Schema { return p.schema }

// Blocks is the number of blocks of ReadBlock (core.Splittable; see
// blockText).
func (p *csvParallel) Blocks() int { return p.bt.Blocks() }

// ReadBlock reads block b (core.Splittable; see blockText). It does not
// start the parsing goroutines: a source is read by Next or by blocks.
func (p *csvParallel) ReadBlock(ctx context.Context, b int, errs *core.ErrorPolicy, emit func(*core.Batch) error) error {
	return p.bt.ReadBlock(ctx, b, errs, emit)
}

// errBlockEnd tells Next that a block of bt ends: its batch ends too.
var errBlockEnd = errors.New("block end")

// Next returns the next batch of up to core.BatchSize records, owned by the
// caller, or (nil, io.EOF) after the last one: the batches of the sequential
// reader, record for record and boundary for boundary (every batch full but
// the last), since where a batch ends decides where the source stage moves
// the watermark, and so which records are late and which windows they fall
// in. The workers' batches end at block ends and before malformed records;
// Next copies their records into full batches (one copy per slice, about as
// costly as the batch's bytes), handing a worker's batch on as it is when it
// is already full and aligned. Malformed records go to the ErrorPolicy in
// file order from this goroutine; under Fail Next returns its
// *core.RecordError and drops the batch it was filling, as the sequential
// reader does. It blocks while the workers parse and returns ctx.Err() once
// ctx is done (the batch being filled is kept for the next call); the
// goroutines start on the first call and run until the end of the file or
// Close.
func (p *csvParallel) Next(ctx context.Context) (*core.Batch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if p.closed {
		return nil, errClosed
	}
	for {
		if p.src != nil {
			if p.out == nil {
				if p.srcPos == 0 { // aligned: no copy
					b := p.src
					p.src = nil
					if b.Full() {
						return b, nil
					}
					p.out = b
					continue
				}
				p.out = core.NewBatch(p.schema)
			}
			n := min(core.BatchSize-p.out.Len, p.src.Len-p.srcPos)
			p.out.AppendRange(p.src, p.srcPos, p.srcPos+n)
			if p.srcPos += n; p.srcPos == p.src.Len {
				p.src.Release()
				p.src, p.srcPos = nil, 0
			}
		}
		if p.out != nil && p.out.Full() {
			b := p.out
			p.out = nil
			return b, nil
		}
		b, err := p.pull(ctx)
		switch {
		case err == errBlockEnd:
			if b := p.out; b != nil {
				p.out = nil
				return b, nil
			}
			continue
		case err == io.EOF:
			if b := p.out; b != nil {
				p.out = nil
				return b, nil
			}
			return nil, io.EOF
		case err != nil && ctx.Err() != nil:
			return nil, err
		case err != nil: // the ErrorPolicy's: the sequential reader drops its batch
			if p.out != nil {
				p.out.Release()
				p.out = nil
			}
			return nil, err
		}
		p.src, p.srcPos = b, 0
	}
}

// pull returns the next batch of the workers (or of the sequential reader
// after a fall-back), in file order, reporting the malformed records before
// it to the ErrorPolicy; io.EOF after the last.
func (p *csvParallel) pull(ctx context.Context) (*core.Batch, error) {
	for {
		if p.fall != nil {
			if p.fallEnd {
				p.fallEnd = false
				return nil, errBlockEnd
			}
			b, end, err := p.fall.next(ctx)
			if b == nil && err == nil {
				return nil, errBlockEnd
			}
			p.fallEnd = end
			return b, err
		}
		if p.eof {
			return nil, io.EOF
		}
		if p.cur == nil {
			if !p.started {
				p.start()
			}
			var r *csvResult
			var ok bool
			select {
			case r, ok = <-p.results[p.block%p.k]:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if !ok {
				p.eof = true
				p.stop()
				return nil, io.EOF
			}
			p.block++
			if r.redo {
				p.fallBack(r.off, r.line)
				continue
			}
			p.cur = r
		}
		if len(p.cur.items) == 0 {
			end := p.cur.end
			p.cur = nil
			if end {
				return nil, errBlockEnd
			}
			continue
		}
		it := p.cur.items[0]
		p.cur.items[0] = csvItem{}
		p.cur.items = p.cur.items[1:]
		if it.bad != nil {
			if err := p.errs.Bad(p.input, it.bad.line, it.bad.raw, it.bad.reason); err != nil {
				return nil, err
			}
			continue
		}
		return it.b, nil
	}
}

// fallBack stops the goroutines and reads on sequentially from offset off,
// line line, with the block reader (whose batches end at block ends too).
func (p *csvParallel) fallBack(off, line int64) {
	p.stop()
	p.bt.seek(off, line)
	p.fall = p.bt
}

// linesBefore returns the 1-based line of offset off of f (off at a line
// start): one more than the '\n's before it.
func linesBefore(f *os.File, off int64) (int64, error) {
	line := int64(1)
	buf := make([]byte, min(off, 64<<10))
	for at := int64(0); at < off; {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), off-at)], at)
		line += int64(bytes.Count(buf[:n], newline))
		at += int64(n)
		if err != nil && at < off {
			return 0, err
		}
	}
	return line, nil
}

// Close stops the reader and the workers, releases the batches they hold
// and closes the file. Safe to call more than once; Next then returns
// errClosed.
func (p *csvParallel) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	p.stop()
	for _, b := range []*core.Batch{p.src, p.out} {
		b.Release()
	}
	p.src, p.out = nil, nil
	return p.bt.Close()
}

func (p *csvParallel) start() {
	p.started = true
	p.done = make(chan struct{})
	p.work = make([]chan *csvBlock, p.k)
	p.results = make([]chan *csvResult, p.k)
	p.free = make(chan []byte, 2*p.k+2)
	for i := range p.k {
		p.work[i] = make(chan *csvBlock, 1)
		p.results[i] = make(chan *csvResult, 1)
	}
	p.wg.Add(p.k + 1)
	go p.read()
	for i := range p.k {
		w := &csvWorker{p: p, c: p.seq.clone()}
		go w.run(p.work[i], p.results[i])
	}
}

// stop stops the goroutines, if they run, and releases every batch they
// and Next hold.
func (p *csvParallel) stop() {
	if !p.started || p.shut {
		return
	}
	p.shut = true
	close(p.done)
	p.wg.Wait()
	for _, ch := range p.results {
	drain:
		for {
			select {
			case r, ok := <-ch:
				if !ok {
					break drain
				}
				r.release()
			default:
				break drain
			}
		}
	}
	if p.cur != nil {
		p.cur.release()
		p.cur = nil
	}
}

// read is the reader goroutine: it cuts the file into blocks and deals
// them to the workers in turn. It closes the work channels when it ends.
func (p *csvParallel) read() {
	defer p.wg.Done()
	defer func() {
		for _, ch := range p.work {
			close(ch)
		}
	}()
	send := func(i int, b *csvBlock) bool {
		select {
		case p.work[i%p.k] <- b:
			return true
		case <-p.done:
			return false
		}
	}
	off, line := p.off, p.line // the next block's start
	var carry []byte           // the records of the last read not yet sent
	starts := p.bt.x.starts    // a block never spans one of these
	for i := 0; ; i++ {
		for len(starts) > 0 && starts[0] <= off {
			starts = starts[1:]
		}
		size := p.blockSize
		for size < 2*len(carry) {
			size *= 2
		}
		buf := p.buffer(size)
		buf = append(buf[:0], carry...)
		cut, end := -1, false
		for {
			lim := cap(buf)
			if len(starts) > 0 && starts[0]-off <= int64(lim) {
				lim = int(starts[0] - off)
			}
			n, err := p.f.ReadAt(buf[len(buf):lim], off+int64(len(buf)))
			buf = buf[:len(buf)+n]
			if len(starts) > 0 && off+int64(len(buf)) == starts[0] {
				cut, end = len(buf), true // up to where a block starts: a record boundary
				break
			}
			if err == io.EOF {
				cut = len(buf)
				break
			}
			if err != nil {
				send(i, &csvBlock{off: off, line: line, redo: true})
				return
			}
			if cut = recordCut(buf); cut >= 0 {
				break
			}
			buf = slices.Grow(buf, len(buf)) // a record longer than the full buffer: double it
		}
		if cut == 0 {
			return // the end of the file
		}
		carry = append(carry[:0], buf[cut:]...)
		b := &csvBlock{buf: buf[:cut], off: off, line: line, end: end}
		off += int64(cut)
		line += int64(bytes.Count(b.buf, newline))
		if !send(i, b) {
			return
		}
	}
}

var newline = []byte{'\n'}

// buffer returns an empty buffer of capacity size, reused if size is the
// block size.
func (p *csvParallel) buffer(size int) []byte {
	if size == p.blockSize {
		select {
		case b := <-p.free:
			return b
		default:
		}
	}
	return make([]byte, 0, size)
}

// recycle keeps b for a later block unless it grew past the block size.
func (p *csvParallel) recycle(b []byte) {
	if cap(b) != p.blockSize {
		return
	}
	select {
	case p.free <- b[:0]:
	default:
	}
}

// csvWorker parses blocks into batches.
type csvWorker struct {
	p  *csvParallel
	c  *csvReader // the columns, with interners of this worker's own
	rd bytes.Reader
}

func (w *csvWorker) run(work <-chan *csvBlock, results chan<- *csvResult) {
	defer w.p.wg.Done()
	for {
		var b *csvBlock
		var ok bool
		select {
		case b, ok = <-work:
		case <-w.p.done:
			return
		}
		if !ok {
			close(results)
			return
		}
		r := w.parse(b)
		w.p.recycle(b.buf)
		select {
		case results <- r:
		case <-w.p.done:
			r.release()
			return
		}
	}
}

// parse parses block b into batches and malformed records. A quoting error
// anywhere in the block drops its results for a redo from its start.
func (w *csvWorker) parse(b *csvBlock) *csvResult {
	r := &csvResult{off: b.off, line: b.line, end: b.end}
	if b.redo {
		r.redo = true
		return r
	}
	w.rd.Reset(b.buf)
	w.c.attach(&w.rd, -1)
	w.c.line0 = b.line - 1
	batch := core.NewBatch(w.p.schema)
	for {
		row := batch.Append(0, 0, core.NoTime, 0)
		line, err := w.c.next(row)
		if err == nil {
			batch.Pos[batch.Len-1] = line
			if batch.Full() {
				r.items = append(r.items, csvItem{b: batch})
				batch = core.NewBatch(w.p.schema)
			}
			continue
		}
		batch.Truncate(batch.Len - 1)
		var bad *badRecord
		if !errors.As(err, &bad) || bad.quoting {
			// io.EOF, or a quoting error: the cut at this block's end (and
			// later ones) may be wrong.
			if err == io.EOF {
				break
			}
			batch.Release()
			r.release()
			r.redo = true
			return r
		}
		if batch.Len > 0 {
			r.items = append(r.items, csvItem{b: batch})
			batch = core.NewBatch(w.p.schema)
		}
		r.items = append(r.items, csvItem{bad: bad})
	}
	if batch.Len > 0 {
		r.items = append(r.items, csvItem{b: batch})
	} else {
		batch.Release()
	}
	return r
}
