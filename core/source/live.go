package source

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
	"unicode/utf8"

	"streamd/core"
	"streamd/core/internal/bom"
)

// DefaultPoll is how often a live file source looks at an idle input when
// LiveOptions.Poll is zero.
const DefaultPoll = 200 * time.Millisecond

// LiveOptions configures a live file source (LiveCSV, LiveJSON).
type LiveOptions struct {
	// Follow tails each file as it grows, as tail -F does: a line without
	// its newline is not a record until the newline arrives, and the end
	// of the file is not the end of the input. Alone (a path naming one
	// file), it follows the file across rotation by rename (the path now
	// names another file) and truncation (copytruncate).
	Follow bool
	// Watch takes the files of a directory or glob pattern that appear
	// while the job runs, each once, in name order among those found in
	// one look. Without Follow a file is complete when it appears (write
	// it under a hidden name, ".x.csv", and rename it in); with Follow
	// each file is followed until a later one appears and it has not
	// grown for one poll.
	Watch bool
	// Poll is how often an idle source looks for new data, rotation and
	// new files; 0 is DefaultPoll.
	Poll time.Duration
	// IdleTimeout, if positive, ends the input when no record has arrived
	// for that long (processing time): a line left without its newline is
	// then a last record, as at the end of a file.
	IdleTimeout time.Duration
	// Log, if set, is told of rotations and truncations.
	Log func(msg string, args ...any)
}

// LiveCSV returns a live source of the CSV file, directory or pattern at
// path (see Live for what live means); opts as for CSV, but Reader,
// Compression and Parallelism are not used: a live file is plain text
// parsed by one reader as it grows. With a header and no Columns the
// schema is the first file's header, which must be there when LiveCSV is
// called; with Columns a file's header may arrive later.
func LiveCSV(path string, opts CSVOptions, live LiveOptions, errs *core.ErrorPolicy) (core.Source, error) {
	d, err := checkDelimiter(opts.Delimiter)
	if err != nil {
		return nil, fmt.Errorf("csv source %s: %w", path, err)
	}
	var buf [utf8.UTFMax]byte
	n := utf8.EncodeRune(buf[:], d)
	lf := &liveFormat{kind: "csv", quotes: true, comma: buf[n-1]}
	var proto *csvReader // the schema without a file: no header, or a header with Columns
	if !opts.Header || len(opts.Columns) > 0 {
		o := opts
		o.Header = false
		if proto, err = newCSVReader(path, emptyInput{}, o, errs); err != nil {
			return nil, err
		}
		lf.schema = proto.schema
	}
	lf.open = func(name string, f *os.File, end int64) (blockReader, int64, int64, error) {
		mark, err := bom.At(f)
		if err != nil {
			return nil, 0, 0, err
		}
		if !opts.Header {
			r := proto.clone()
			r.input, r.errs = name, policy(errs)
			return r, mark, 0, nil
		}
		if end <= mark {
			return nil, 0, 0, errNoHeaderYet
		}
		r, err := newCSVReader(name, bufio.NewReaderSize(bom.NewReader(io.NewSectionReader(f, 0, end)), 64<<10), opts, errs)
		if err != nil {
			return nil, 0, 0, err
		}
		off := mark + r.start
		line, err := linesBefore(f, off)
		if err != nil {
			return nil, 0, 0, err
		}
		return r, off, line - 1, nil
	}
	return newLive("csv", path, lf, live, errs)
}

// LiveJSON returns a live source of the JSON-lines file, directory or
// pattern at path (kind "jsonl" or "json", in errors); opts as for JSON,
// whose Format must be JSONLines when following (a line is the unit that
// arrives whole) and may be any format under Watch alone.
func LiveJSON(kind, path string, opts JSONOptions, live LiveOptions, errs *core.ErrorPolicy) (core.Source, error) {
	if live.Follow && opts.Format != JSONLines {
		return nil, fmt.Errorf("%s source %s: follow reads JSON lines (format lines), not format %s", kind, path, opts.Format)
	}
	proto, err := newJSONReader(kind, path, emptyInput{}, withFormat(opts), errs)
	if err != nil {
		return nil, err
	}
	lf := &liveFormat{kind: kind, schema: proto.schema}
	lf.open = func(name string, f *os.File, end int64) (blockReader, int64, int64, error) {
		mark, err := bom.At(f)
		if err != nil {
			return nil, 0, 0, err
		}
		if opts.Format != JSONLines {
			// A watched complete file of an array or values: its own reader,
			// which tells the format from the first byte under auto.
			r, err := newJSONReader(kind, name, bufio.NewReaderSize(bom.NewReader(io.NewSectionReader(f, 0, end)), readBufferSize), opts, errs)
			if err != nil {
				return nil, 0, 0, err
			}
			return r, -1, 0, nil // the reader reads the whole file itself
		}
		r, err := newJSONReader(kind, name, emptyInput{}, opts, errs)
		if err != nil {
			return nil, 0, 0, err
		}
		return r, mark, 0, nil
	}
	return newLive(kind, path, lf, live, errs)
}

// withFormat is opts with a format a reader can be made with before any
// input is seen (auto needs the first byte).
func withFormat(opts JSONOptions) JSONOptions {
	if opts.Format == JSONAuto {
		opts.Format = JSONLines
	}
	return opts
}

// emptyInput is an input with nothing in it.
type emptyInput struct{}

func (emptyInput) Read([]byte) (int, error) { return 0, io.EOF }

var errNoHeaderYet = errors.New("the header line has not arrived")

// liveFormat is how a live source reads one format.
type liveFormat struct {
	kind   string
	schema *core.Schema // nil: the first file's header says
	// quotes: a newline inside a quoted field does not end a record (CSV),
	// whose fields are separated by comma (the delimiter's last byte).
	quotes bool
	comma  byte
	// open makes the reader of file f, whose complete records end at end,
	// reading its header if it has one, and says where records start:
	// the offset and the number of lines before it. An offset of -1 means
	// the reader reads the whole file itself (a JSON array or values).
	// errNoHeaderYet: the header line has not arrived.
	open func(name string, f *os.File, end int64) (rr blockReader, off, lines int64, err error)
}

// newLive makes the source and opens its first file.
func newLive(kind, path string, lf *liveFormat, opts LiveOptions, errs *core.ErrorPolicy) (*liveSource, error) {
	if opts.Poll < 0 || opts.IdleTimeout < 0 {
		return nil, fmt.Errorf("%s source %s: poll and idle timeout must not be negative", kind, path)
	}
	if opts.Poll == 0 {
		opts.Poll = DefaultPoll
	}
	s := &liveSource{kind: kind, path: path, lf: lf, opts: opts, errs: policy(errs), schema: lf.schema,
		seen: map[string]bool{}, br: bufio.NewReaderSize(nil, readBufferSize), timer: time.NewTimer(time.Hour)}
	s.timer.Stop()
	if opts.Watch {
		names, err := Expand(path)
		if err != nil && !errors.Is(err, ErrNoFiles) {
			return nil, fmt.Errorf("%s source %s: %w", kind, path, err)
		}
		s.take(names)
	} else {
		s.queue = []string{path}
	}
	if len(s.queue) > 0 {
		if err := s.openNext(); err != nil {
			s.Close()
			return nil, err
		}
		if s.cur == nil && !opts.Watch {
			return nil, fmt.Errorf("%s source %s: %w", kind, path, fs.ErrNotExist)
		}
	}
	if s.schema == nil && s.cur != nil && s.cur.rr == nil {
		if _, err := s.refill(s.cur); err != nil {
			s.Close()
			return nil, err
		}
	}
	if s.schema == nil {
		s.Close()
		return nil, fmt.Errorf("%s source %s: no header line to take the columns from yet: give the columns (name: type) to read a file whose header has not arrived", kind, path)
	}
	s.row = make([]core.Value, s.schema.Width())
	return s, nil
}

// liveSource reads files that grow and appear while it runs. It has no
// goroutine of its own: Next reads what the files hold now, and waits a
// poll interval when they hold nothing new.
type liveSource struct {
	kind, path string
	lf         *liveFormat
	opts       LiveOptions
	errs       *core.ErrorPolicy
	schema     *core.Schema
	row        []core.Value // scratch for skipping records

	cur   *liveFile
	queue []string        // taken, not yet opened, in name order
	seen  map[string]bool // watch: every file taken
	done  []string        // watch: the files read to their end, in order
	gen   int64           // the ordinal the next file opened gets (Pos)
	total int64           // records returned (and skipped on restore)

	br      *bufio.Reader
	scratch []byte
	timer   *time.Timer
	idle    time.Time // when the source last found nothing; zero while records come
	ending  bool      // the idle timeout passed: read what is there and end
	eof     bool
	closed  bool
	resume  *liveState

	rotations, truncations int64
}

// liveFile is one file being read. The reader reads the bytes [from, to);
// read counts its good records so far. The scan state is that of the
// bytes before scan: recEnd is the end of the last complete record in
// them, recLines the lines before it.
type liveFile struct {
	name string
	f    *os.File
	st   os.FileInfo
	gen  int64
	rr   blockReader
	// whole: rr reads the file itself (a watched JSON array), not ranges.
	whole bool

	from, fromLine, to, toLine, read int64

	scan, lines, recEnd, recLines int64
	inQuote, quoteSeen, midField  bool

	// final: no more data is expected (a watched complete file, a file
	// rotated away or superseded, the idle end): the bytes after the last
	// newline are a last record.
	final    bool
	lookSize int64 // the size at the last look (rotation waits for it to stop growing)
}

func (s *liveSource) Schema() *core.Schema { return s.schema }

func (s *liveSource) log(msg string, args ...any) {
	if s.opts.Log != nil {
		s.opts.Log(msg, args...)
	}
}

// take queues the files of names not taken before, in name order.
func (s *liveSource) take(names []string) {
	for _, n := range names {
		if !s.seen[n] {
			s.seen[n] = true
			s.queue = append(s.queue, n)
		}
	}
}

// openNext opens the first queued file as the current one. A file that
// is not there (a rotation's new file not yet created, a watched file
// removed) is waited for when following one path, skipped under watch.
func (s *liveSource) openNext() error {
	for len(s.queue) > 0 {
		name := s.queue[0]
		f, err := os.Open(name)
		if errors.Is(err, fs.ErrNotExist) {
			if !s.opts.Watch {
				return nil // the path comes back after the rotation
			}
			s.queue = s.queue[1:]
			continue
		}
		if err != nil {
			return fmt.Errorf("%s source: %w", s.kind, err)
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return fmt.Errorf("%s source: %w", s.kind, err)
		}
		if st.IsDir() {
			f.Close()
			return fmt.Errorf("%s source %s: is a directory: watch: true reads the files that appear in a directory", s.kind, name)
		}
		s.queue = s.queue[1:]
		s.cur = &liveFile{name: name, f: f, st: st, gen: s.gen, final: !s.opts.Follow || s.ending, lookSize: st.Size()}
		s.gen++
		return nil
	}
	return nil
}

// finish closes the current file, read to its end.
func (s *liveSource) finish() {
	if s.opts.Watch {
		s.done = append(s.done, s.cur.name)
	}
	s.cur.f.Close()
	s.cur = nil
}

// Next returns the records that complete lines now hold, in batches of
// up to core.BatchSize, owned by the caller. A batch ends when it is full
// or at the end of what the files hold now (so no linger: what has been
// written is all there is until the next poll). When the files hold
// nothing new it waits one poll interval (opts.Poll), looks for growth,
// rotation, truncation and new files, and returns a batch if that found
// records, else (nil, core.ErrIdle), so that the caller can inject a due
// checkpoint barrier while the input is idle. It returns (nil, io.EOF)
// only after the idle timeout (never without one), and ctx.Err() promptly
// once ctx is done. Malformed records go to the ErrorPolicy; under Fail
// Next returns its *core.RecordError.
func (s *liveSource) Next(ctx context.Context) (*core.Batch, error) {
	if s.closed {
		return nil, errClosed
	}
	if s.resume != nil { // a checkpoint at position 0: Replayable skips nothing
		if _, err := s.SkipRecords(ctx, s.resume.Records); err != nil {
			return nil, err
		}
	}
	waited := false
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if s.eof {
			return nil, io.EOF
		}
		b, err := s.fill()
		if err != nil {
			return nil, err
		}
		if b != nil {
			s.idle = time.Time{}
			s.total += int64(b.Len)
			return b, nil
		}
		if s.ending && s.cur == nil { // files still queued are gone
			s.eof = true
			return nil, io.EOF
		}
		now := time.Now()
		if s.idle.IsZero() {
			s.idle = now
		}
		if t := s.opts.IdleTimeout; t > 0 && !s.ending && now.Sub(s.idle) >= t {
			s.ending = true
			if s.cur != nil {
				s.cur.final = true
			}
			s.log("live input idle: ending it", "source", s.path, "idle_timeout", t)
			continue
		}
		if waited {
			return nil, core.ErrIdle
		}
		s.timer.Reset(s.opts.Poll)
		select {
		case <-ctx.Done():
			s.timer.Stop()
			return nil, ctx.Err()
		case <-s.timer.C:
		}
		waited = true
		if err := s.look(); err != nil {
			return nil, err
		}
	}
}

// fill reads the records the files hold now into a batch: nil if none.
func (s *liveSource) fill() (*core.Batch, error) {
	var b *core.Batch
	for {
		if s.cur == nil {
			if err := s.openNext(); err != nil || s.cur == nil {
				return b, err
			}
		}
		c := s.cur
		if c.rr != nil {
			if b == nil {
				b = core.NewBatch(s.schema)
			}
			for !b.Full() {
				row := b.Append(0, 0, core.NoTime, 0)
				line, err := c.rr.read(row)
				if err != nil {
					b.Truncate(b.Len - 1)
					if err != io.EOF {
						b.Release()
						return nil, err
					}
					break
				}
				b.Pos[b.Len-1] = line
				c.read++
			}
			if b.Full() {
				return b, nil
			}
		}
		more, err := s.refill(c)
		if err != nil {
			if b != nil {
				b.Release()
			}
			return nil, err
		}
		if more {
			continue
		}
		if !c.final {
			break
		}
		s.finish()
	}
	if b != nil && b.Len == 0 {
		b.Release()
		b = nil
	}
	return b, nil
}

// refill points c's reader at the complete records after those it has
// read, if the file holds more; it reads the header first if the reader
// is not made yet. It says whether there is more to read. A file that
// shrank below what was scanned was truncated: it is read again from its
// start as a new file (counted, logged).
func (s *liveSource) refill(c *liveFile) (bool, error) {
	if c.whole {
		return false, nil // its reader read it to its end
	}
	st, err := c.f.Stat()
	if err != nil {
		return false, fmt.Errorf("%s source %s: %w", s.kind, c.name, err)
	}
	size := st.Size()
	if size < c.scan {
		if c.final && !s.opts.Follow {
			return false, nil // a watched complete file: read once
		}
		s.truncations++
		s.log("followed file truncated: reading it again from its start", "file", c.name, "size", size, "offset", c.scan, "truncations", s.truncations)
		*c = liveFile{name: c.name, f: c.f, st: st, gen: s.gen, final: c.final, lookSize: size}
		s.gen++
	}
	if size > c.scan {
		if err := s.scanTo(c, size); err != nil {
			return false, err
		}
	}
	end, endLines := c.recEnd, c.recLines
	if c.final && c.scan == size {
		end, endLines = size, c.lines // a last line without its newline
	}
	if c.rr == nil {
		if end == 0 {
			return false, nil
		}
		rr, off, lines, err := s.lf.open(c.name, c.f, end)
		if errors.Is(err, errNoHeaderYet) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if s.schema == nil {
			s.schema = s.rrSchema(rr)
		} else if sc := s.rrSchema(rr); sc.String() != s.schema.String() {
			return false, fmt.Errorf("%s source %s: schema %s differs from %s: the files of one source must have the same columns", s.kind, c.name, sc, s.schema)
		}
		setBase(rr, c.gen<<core.PosFileShift)
		c.rr = rr
		if off < 0 {
			c.whole = true
			return true, nil
		}
		c.from, c.fromLine, c.to, c.toLine = off, lines, off, lines
	}
	if end <= c.to {
		return false, nil
	}
	c.from, c.fromLine, c.to, c.toLine, c.read = c.to, c.toLine, end, endLines, 0
	s.br.Reset(io.NewSectionReader(c.f, c.from, c.to-c.from))
	c.rr.reset(s.br, c.fromLine, s.errs)
	return true, nil
}

func (s *liveSource) rrSchema(rr blockReader) *core.Schema {
	switch r := rr.(type) {
	case *csvReader:
		return r.schema
	case *jsonlReader:
		return r.schema
	}
	panic("live source: unknown reader")
}

func setBase(rr blockReader, base int64) {
	switch r := rr.(type) {
	case *csvReader:
		r.base = base
	case *jsonlReader:
		r.base = base
	}
}

// scanTo scans c's bytes [c.scan, size) for record ends: a newline, for
// CSV one outside a quoted field (a quote opens a field only at its
// start, as RFC 4180 has it; "" inside is an escaped quote).
func (s *liveSource) scanTo(c *liveFile, size int64) error {
	if s.scratch == nil {
		s.scratch = make([]byte, 64<<10)
	}
	for c.scan < size {
		n, err := c.f.ReadAt(s.scratch[:min(int64(len(s.scratch)), size-c.scan)], c.scan)
		if n == 0 && err != nil {
			if err == io.EOF {
				return nil // shrank since the stat: the next refill sees it
			}
			return fmt.Errorf("%s source %s: %w", s.kind, c.name, err)
		}
		buf := s.scratch[:n]
		if !s.lf.quotes {
			if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
				c.lines += int64(bytes.Count(buf, newline))
				c.recEnd, c.recLines = c.scan+int64(i)+1, c.lines
			}
			c.scan += int64(n)
			continue
		}
		for i, ch := range buf {
			if c.inQuote {
				if !c.quoteSeen {
					if ch == '"' {
						c.quoteSeen = true
					} else if ch == '\n' {
						c.lines++
					}
					continue
				}
				c.quoteSeen = false
				if ch == '"' {
					continue // "" : an escaped quote
				}
				c.inQuote = false // the quote before closed the field
			}
			switch ch {
			case '\n':
				c.lines++
				c.recEnd, c.recLines = c.scan+int64(i)+1, c.lines
				c.midField = false
			case '"':
				c.inQuote = !c.midField
				c.midField = true
			case s.lf.comma:
				c.midField = false
			default:
				c.midField = true
			}
		}
		c.scan += int64(n)
	}
	return nil
}

// look is what the source does after an idle poll: follow one path
// across rotation, or take the files that appeared.
func (s *liveSource) look() error {
	if s.ending {
		return nil
	}
	grew := false
	if c := s.cur; c != nil {
		if st, err := c.f.Stat(); err == nil {
			grew = st.Size() != c.lookSize
			c.lookSize = st.Size()
		}
	}
	if !s.opts.Watch {
		c := s.cur
		if c == nil || c.final {
			return nil // waiting for the path to come back (openNext)
		}
		st, err := os.Stat(s.path)
		if err != nil || os.SameFile(st, c.st) || grew {
			return nil // not rotated, or the old file still grows: one more poll
		}
		s.rotations++
		s.log("followed file rotated: reading the rest of the old file, then the new one", "file", s.path, "rotations", s.rotations)
		c.final = true
		s.queue = append(s.queue, s.path)
		return nil
	}
	names, err := Expand(s.path)
	if err != nil && !errors.Is(err, ErrNoFiles) {
		return fmt.Errorf("%s source %s: %w", s.kind, s.path, err)
	}
	s.take(names)
	if c := s.cur; c != nil && !c.final && len(s.queue) > 0 && !grew {
		c.final = true // superseded by a later file
	}
	return nil
}

// Close closes the file being read. Safe to call more than once.
func (s *liveSource) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.timer.Stop()
	if s.cur != nil {
		return s.cur.f.Close()
	}
	return nil
}

// liveState is a live source's position in a checkpoint (core.Resumer).
type liveState struct {
	Records int64 `json:"records"` // the Replayable position it goes with
	// Gen is the ordinal of File (or, with no File, of the next file).
	Gen  int64  `json:"gen"`
	File string `json:"file,omitempty"` // the file being read; "" between files
	Dev  uint64 `json:"dev,omitempty"`
	Ino  uint64 `json:"ino,omitempty"`
	// The reader resumes at byte From, on line Line+1, and skips the Skip
	// good records that start there (read before the checkpoint).
	From  int64 `json:"from,omitempty"`
	Line  int64 `json:"line,omitempty"`
	Skip  int64 `json:"skip,omitempty"`
	Final bool  `json:"final,omitempty"` // File was rotated away or superseded
	// Done: under watch, the files read to their end, in order.
	Done []string `json:"done,omitempty"`
}

// ResumeState is the position after the last batch Next returned
// (core.Resumer): the file, its identity (device and inode), and the byte
// offset and record count of the reader in it, as JSON.
func (s *liveSource) ResumeState() (string, error) {
	st := liveState{Records: s.total, Gen: s.gen, Done: s.done}
	if c := s.cur; c != nil {
		st.Gen, st.File, st.Final = c.gen, c.name, c.final
		st.Dev, st.Ino = fileID(c.st)
		if c.rr != nil && !c.whole {
			st.From, st.Line, st.Skip = c.from, c.fromLine, c.read
		}
		if c.whole {
			st.Skip = c.read
		}
	}
	b, err := json.Marshal(st)
	return string(b), err
}

func fileID(st os.FileInfo) (dev, ino uint64) {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(sys.Dev), sys.Ino
	}
	return 0, 0
}

// Resume takes a checkpoint's state (core.Resumer); SkipRecords applies
// it.
func (s *liveSource) Resume(state string) error {
	if state == "" {
		return fmt.Errorf("%s source %s: the checkpoint holds no position of the live input (taken by a job that did not follow or watch it)", s.kind, s.path)
	}
	var st liveState
	if err := json.Unmarshal([]byte(state), &st); err != nil {
		return fmt.Errorf("%s source %s: the checkpoint's position: %w", s.kind, s.path, err)
	}
	s.resume = &st
	return nil
}

// SkipRecords goes to the position of the state Resume took (n must be
// its record count, core.Skipper): it reopens the file the checkpoint was
// reading (found by its device and inode: under its name, or for a
// followed path under another name in the same directory, where rotation
// by rename put it), checks that it still holds the bytes read before,
// and skips the records read from the reader's last start. Under watch,
// the files read before are not taken again. A file that is gone or
// shorter than the position is an error: resuming would lose its records
// after the checkpoint.
func (s *liveSource) SkipRecords(ctx context.Context, n int64) (int64, error) {
	st := s.resume
	if st == nil {
		if n == 0 {
			return 0, nil
		}
		return 0, fmt.Errorf("%s source %s: skip %d records: no checkpoint state to resume from", s.kind, s.path, n)
	}
	s.resume = nil
	if st.Records != n {
		return 0, fmt.Errorf("%s source %s: the checkpoint's live position is at record %d, its replay position at %d", s.kind, s.path, st.Records, n)
	}
	if s.cur != nil {
		s.cur.f.Close()
		s.cur = nil
	}
	s.queue, s.seen, s.done = nil, map[string]bool{}, st.Done
	for _, d := range st.Done {
		s.seen[d] = true
	}
	s.gen, s.total = st.Gen, n
	if st.File != "" {
		s.seen[st.File] = true
		if err := s.reopen(st); err != nil {
			return 0, err
		}
	}
	if s.opts.Watch {
		names, err := Expand(s.path)
		if err != nil && !errors.Is(err, ErrNoFiles) {
			return 0, fmt.Errorf("%s source %s: %w", s.kind, s.path, err)
		}
		s.take(names)
	} else if s.cur == nil || s.cur.final {
		s.queue = append(s.queue, s.path)
	}
	if c := s.cur; c != nil && st.Skip > 0 {
		for k := int64(0); k < st.Skip; {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			if c.rr != nil {
				if _, err := c.rr.read(s.row); err == nil {
					k++
					c.read++
					continue
				} else if err != io.EOF {
					return 0, err
				}
			}
			more, err := s.refill(c)
			if err != nil {
				return 0, err
			}
			if !more {
				return 0, fmt.Errorf("%s source %s: %s holds %d records after byte %d, the checkpoint read %d there: it changed since, and resuming would not be exactly once", s.kind, s.path, c.name, k, st.From, st.Skip)
			}
		}
	}
	return n, nil
}

// reopen opens the file of the checkpoint state st and points the reader
// at its position.
func (s *liveSource) reopen(st *liveState) error {
	same := func(fi os.FileInfo) bool {
		d, i := fileID(fi)
		return d == st.Dev && i == st.Ino
	}
	name := st.File
	fi, err := os.Stat(name)
	if err != nil || !same(fi) {
		name = ""
		if !s.opts.Watch {
			// Rotated by rename: look beside the path.
			ents, _ := os.ReadDir(filepath.Dir(s.path))
			for _, e := range ents {
				p := filepath.Join(filepath.Dir(s.path), e.Name())
				if fi, err = os.Stat(p); err == nil && fi.Mode().IsRegular() && same(fi) {
					name = p
					break
				}
			}
		}
	}
	if name == "" {
		return fmt.Errorf("%s source %s: cannot resume: %s (inode %d), which the checkpoint was reading at byte %d, is gone: its records after the checkpoint would be lost; start afresh without --restore", s.kind, s.path, st.File, st.Ino, st.From)
	}
	if fi.Size() < st.From {
		return fmt.Errorf("%s source %s: cannot resume: %s is %d bytes, the checkpoint had read it to byte %d: it was truncated since, and its records after the checkpoint are lost; start afresh without --restore", s.kind, s.path, name, fi.Size(), st.From)
	}
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("%s source: %w", s.kind, err)
	}
	c := &liveFile{name: name, f: f, st: fi, gen: st.Gen, lookSize: fi.Size(),
		final: st.Final || !s.opts.Follow || (!s.opts.Watch && name != s.path)}
	s.cur, s.gen = c, st.Gen+1
	if st.From == 0 {
		return nil // nothing of it was read in ranges: from its start (Skip, if any, counts from there)
	}
	rr, off, _, err := s.lf.open(name, f, st.From)
	if err != nil {
		f.Close()
		s.cur = nil
		return err
	}
	setBase(rr, c.gen<<core.PosFileShift)
	c.rr = rr
	if off < 0 {
		c.whole = true
		return nil
	}
	c.scan, c.lines, c.recEnd, c.recLines = st.From, st.Line, st.From, st.Line
	c.from, c.fromLine, c.to, c.toLine = st.From, st.Line, st.From, st.Line
	// The reader read the header from [0, From): it reads nothing more
	// until refill points it at the bytes after From.
	s.br.Reset(emptyInput{})
	rr.reset(s.br, st.Line, s.errs)
	return nil
}
