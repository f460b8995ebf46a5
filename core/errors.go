package core

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
)

// ErrorMode is a job's on_error policy for malformed records.
type ErrorMode uint8

const (
	// Fail stops the job with an error naming the input, position and field.
	Fail ErrorMode = iota
	// Skip drops the record and counts it.
	Skip
	// DeadLetter writes the record, with the reason, to the dead-letter
	// file, and counts it.
	DeadLetter
)

// ParseErrorMode maps "fail", "skip" or "dead_letter" to an ErrorMode.
func ParseErrorMode(s string) (ErrorMode, error) {
	switch s {
	case "", "fail":
		return Fail, nil
	case "skip":
		return Skip, nil
	case "dead_letter":
		return DeadLetter, nil
	}
	return Fail, fmt.Errorf("unknown on_error %q (expected fail, skip or dead_letter)", s)
}

// PosFileShift places a file's ordinal in a record's input position
// (Batch.Pos): a source of several files (source.Concat) gives the records
// of its file k (0, 1, …) the positions k<<PosFileShift | line, so that
// positions order the records of all the files as they are read (the
// merger writes dead letters in position order) while the line (or row)
// in the file stays in the low bits: PosLine. A single input's positions
// are its lines (file 0).
const PosFileShift = 40

// PosLine is the line or row, in its own file, of input position pos.
func PosLine(pos int64) int64 { return pos & (1<<PosFileShift - 1) }

// RecordError is the error a job fails with under the Fail policy: where the
// bad record is and why it is bad.
type RecordError struct {
	Input  string // file name, or an operator's name
	Pos    int64  // input position: line or row, 1-based (PosLine); 0 if unknown
	Reason error
}

func (e *RecordError) Error() string {
	if e.Pos > 0 {
		return fmt.Sprintf("%s:%d: %v", e.Input, PosLine(e.Pos), e.Reason)
	}
	return fmt.Sprintf("%s: %v", e.Input, e.Reason)
}

func (e *RecordError) Unwrap() error { return e.Reason }

// ErrorPolicy applies a job's on_error policy. It is safe for concurrent
// use: bad records are rare, so the dead-letter file is behind a mutex.
//
// Dead letters are written through, not buffered: each is one write(2) of
// one whole line, appended before Bad or LateRecord returns, so a killed
// process (SIGKILL) loses none and leaves no half line (a machine crash or
// a full disk still can; the next run cuts a half last line off when it
// opens the file). That costs a system call per dead letter: about 2 µs
// one, against 0.65 µs buffered (BenchmarkDeadLetter, 2-vCPU VM). Sync
// makes them durable; the source stage calls it before it injects a
// checkpoint barrier.
type ErrorPolicy struct {
	Mode ErrorMode
	// Skipped and DeadLettered count bad records; Late counts records that
	// arrived after their windows fired; LateDeadLettered the subset of
	// those written to the dead-letter file.
	Skipped, DeadLettered, Late, LateDeadLettered atomic.Int64
	// PartlyLate counts records that came after some of their windows
	// fired (a sliding window): counted in the windows still open, missing
	// from those that fired.
	PartlyLate atomic.Int64
	// LateFired counts records that came after a window they belong to
	// fired but within the window's allowed lateness: each was added and
	// fired its windows again (an updated row per window).
	LateFired atomic.Int64

	muted atomic.Int32 // > 0: Bad drops records unreported (Mute)
	path  string
	mu    sync.Mutex
	f     *os.File
	dirty bool // written since the last fsync (mu)

	// parent, for a Deferred policy: the policy that counts its records
	// and writes its dead letters; held are the lines not written yet,
	// heldPos their records' input positions, heldSeq their sequence
	// numbers (0 where not given).
	parent  *ErrorPolicy
	held    [][]byte
	heldPos []int64
	heldSeq []uint64

	// fwd, for a Rebased policy: the policy it hands every record to, with
	// the position base | PosLine(pos).
	fwd  *ErrorPolicy
	base int64
	// inputOf, on a job's policy, names the input of a position for the
	// dead letters' "source" (a union's input: NameInputs); nil: none.
	inputOf func(pos int64) string
}

// Rebased returns a policy that hands each bad or late record to p with
// the input position base | PosLine(pos): a union (source.Union) reads a
// block of one of its inputs through it, so that the positions its dead
// letters are ordered by are the union's (core.Interleaved), while the
// line the dead letter shows stays the line in its file. It counts and
// mutes as p does; it holds nothing itself. Allocates once.
func (p *ErrorPolicy) Rebased(base int64) *ErrorPolicy {
	return &ErrorPolicy{Mode: p.Mode, path: p.path, fwd: p, base: base}
}

// NameInputs makes every dead letter written through p (and its Deferred
// and Rebased policies) name the input its record came from, by its
// position, in the field "source": a union's input. Call it before the
// job runs.
func (p *ErrorPolicy) NameInputs(inputOf func(pos int64) string) { p.root().inputOf = inputOf }

// root is the policy that writes p's dead letters.
func (p *ErrorPolicy) root() *ErrorPolicy {
	for {
		switch {
		case p.fwd != nil:
			p = p.fwd
		case p.parent != nil:
			p = p.parent
		default:
			return p
		}
	}
}

// isMuted says whether p, or a policy it hands its records to, is muted.
func (p *ErrorPolicy) isMuted() bool {
	for ; p != nil; p = p.fwd {
		if p.muted.Load() > 0 {
			return true
		}
	}
	return false
}

// Deferred returns a policy of p's mode for one goroutine whose dead
// letters are held in memory, in order, until TakeDeferred hands them to
// the caller, who writes them to p with WriteDeferred. Its counts go to p
// at once. A source worker of several uses one per worker and hands each
// block's dead letters over in block order, so that the dead-letter file
// does not depend on how many workers read. Under Fail its Bad returns the
// record's error as p's does.
func (p *ErrorPolicy) Deferred() *ErrorPolicy {
	return &ErrorPolicy{Mode: p.Mode, path: p.path, parent: p}
}

// TakeDeferred returns the dead-letter lines a Deferred policy holds and
// forgets them. The caller owns the slice.
func (p *ErrorPolicy) TakeDeferred() [][]byte {
	h := p.held
	p.held, p.heldPos, p.heldSeq = nil, p.heldPos[:0], p.heldSeq[:0]
	return h
}

// Held says how many dead letters a Deferred policy holds.
func (p *ErrorPolicy) Held() int { return len(p.held) }

// TakeDeferredPos is TakeDeferred with each line's input position and
// sequence number (pos[i] and seq[i] are lines[i]'s record's; 0 if
// unknown). The caller owns all three.
func (p *ErrorPolicy) TakeDeferredPos() (lines [][]byte, pos []int64, seq []uint64) {
	lines, pos, seq = p.held, p.heldPos, p.heldSeq
	p.held, p.heldPos, p.heldSeq = nil, nil, nil
	return lines, pos, seq
}

// WriteDeferred appends lines taken from a Deferred policy of p to the
// dead-letter file, one write a line.
func (p *ErrorPolicy) WriteDeferred(lines [][]byte) error {
	for _, l := range lines {
		if err := p.writeLine(l); err != nil {
			return err
		}
	}
	return nil
}

// counts is the policy whose counters count p's records.
func (p *ErrorPolicy) counts() *ErrorPolicy {
	if p.fwd != nil {
		return p.fwd.counts()
	}
	if p.parent != nil {
		return p.parent
	}
	return p
}

// NewErrorPolicy returns a policy; deadLetter is the dead-letter file's path
// (needed for DeadLetter mode and for late records sent there). The file is
// created on the first dead letter.
func NewErrorPolicy(mode ErrorMode, deadLetter string) (*ErrorPolicy, error) {
	if mode == DeadLetter && deadLetter == "" {
		return nil, errors.New("on_error: dead_letter needs dead_letter_path")
	}
	return &ErrorPolicy{Mode: mode, path: deadLetter}, nil
}

// Bad handles one malformed record: raw is its text as read (or a
// description), reason why it is bad. It returns a *RecordError under
// Fail, nil otherwise (or the dead-letter file's write error). While the
// policy is muted it drops the record and returns nil, whatever the mode.
func (p *ErrorPolicy) Bad(input string, pos int64, raw string, reason error) error {
	return p.BadSeq(input, pos, 0, raw, reason)
}

// BadSeq is Bad for a record with a sequence number (an operator in a
// channel): a Deferred policy keeps seq with the line, and the channels'
// dead letters are ordered by (position, seq), so that records which share
// a position (one line of JSON holding several) keep their input order
// whatever the channel count.
func (p *ErrorPolicy) BadSeq(input string, pos int64, seq uint64, raw string, reason error) error {
	if p.isMuted() {
		return nil
	}
	switch p.Mode {
	case Skip:
		p.counts().Skipped.Add(1)
		return nil
	case DeadLetter:
		p.counts().DeadLettered.Add(1)
		return p.write(input, pos, seq, raw, reason.Error())
	}
	return &RecordError{Input: input, Pos: pos, Reason: reason}
}

// Mute makes Bad drop malformed records without handling them: not
// counted, not written, no error, under every mode, until as many Unmute
// calls. Replayable mutes the job's policy while it skips the records
// before a checkpoint's position: the malformed ones among them were
// handled before the checkpoint was taken (written to the dead-letter file
// and counted in that run's report), and must not be handled twice. The
// cost is one atomic load in Bad, on the path of malformed records only.
// LateRecord is not muted (no record reaches a window while the source
// skips).
func (p *ErrorPolicy) Mute() { p.muted.Add(1) }

// Unmute undoes one Mute.
func (p *ErrorPolicy) Unmute() { p.muted.Add(-1) }

// LateRecord handles a record that came after its windows fired: counted,
// and written to the dead-letter file when toDeadLetter is set.
// seq is the record's sequence number (see BadSeq; 0 if unknown).
func (p *ErrorPolicy) LateRecord(input string, pos int64, seq uint64, raw string, toDeadLetter bool) error {
	p.counts().Late.Add(1)
	if !toDeadLetter {
		return nil
	}
	p.counts().LateDeadLettered.Add(1)
	return p.write(input, pos, seq, raw, "late: its windows have fired")
}

// ExpiredRecord handles a record that came after its windows expired:
// fired, and the watermark past their ends by the window's allowed
// lateness (> 0). It is LateRecord with the dead letter's reason "late:
// its windows have expired"; a window without allowed lateness calls
// LateRecord, whose reason dead-letter files have always had.
func (p *ErrorPolicy) ExpiredRecord(input string, pos int64, seq uint64, raw string, toDeadLetter bool) error {
	p.counts().Late.Add(1)
	if !toDeadLetter {
		return nil
	}
	p.counts().LateDeadLettered.Add(1)
	return p.write(input, pos, seq, raw, "late: its windows have expired")
}

// PartlyLateRecord counts a record that came after some, not all, of its
// windows fired (PartlyLate). It is not dead-lettered: it is in the
// windows still open.
func (p *ErrorPolicy) PartlyLateRecord() { p.counts().PartlyLate.Add(1) }

// LateRecords counts n records that came after their windows fired, as n
// LateRecord calls without a dead letter would: a window's global step
// meets a partial of n records folded by its local step (window.Spec.Local)
// that is late as a whole. n ≥ 0.
func (p *ErrorPolicy) LateRecords(n int64) { p.counts().Late.Add(n) }

// LateFiredRecord counts a record that fired windows again within their
// allowed lateness (LateFired).
func (p *ErrorPolicy) LateFiredRecord() { p.counts().LateFired.Add(1) }

// PartlyLateRecords counts n records as n PartlyLateRecord calls would.
func (p *ErrorPolicy) PartlyLateRecords(n int64) { p.counts().PartlyLate.Add(n) }

type deadLetter struct {
	Input  string `json:"input"`
	Pos    int64  `json:"pos,omitempty"`
	Reason string `json:"reason"`
	Record string `json:"record"`
	// Source is the input the record came from, in a job of several
	// (ErrorPolicy.NameInputs).
	Source string `json:"source,omitempty"`
}

// write appends one dead letter to the file, opening it on the first.
func (p *ErrorPolicy) write(input string, pos int64, seq uint64, raw, reason string) error {
	if p.fwd != nil {
		return p.fwd.write(input, p.base|PosLine(pos), seq, raw, reason)
	}
	if p.path == "" {
		return errors.New("dead letter: no dead_letter_path set")
	}
	dl := deadLetter{Input: input, Pos: PosLine(pos), Reason: reason, Record: raw}
	if of := p.root().inputOf; of != nil {
		dl.Source = of(pos)
	}
	line, err := json.Marshal(dl)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	if p.parent != nil {
		p.held = append(p.held, line)
		p.heldPos = append(p.heldPos, pos)
		p.heldSeq = append(p.heldSeq, seq)
		return nil
	}
	return p.writeLine(line)
}

// writeLine appends one whole line to the dead-letter file.
func (p *ErrorPolicy) writeLine(line []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.f == nil {
		f, err := openDeadLetters(p.path)
		if err != nil {
			return fmt.Errorf("dead letter file: %w", err)
		}
		p.f = f
	}
	// One Write of the whole line: the file holds all of it or none of it
	// whenever the process dies.
	p.dirty = true
	if _, err := p.f.Write(line); err != nil {
		return fmt.Errorf("dead letter file: %w", err)
	}
	return nil
}

// openDeadLetters opens the dead-letter file at path for appending,
// creating it if needed. A last line without its '\n' (a run that died in
// the middle of writing it: a machine crash, a full disk, or a version that
// buffered its writes) is cut off, so that every line of the file stays one
// JSON object and the next dead letter starts a line of its own.
func openDeadLetters(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	if err := cutTornLine(f, path); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// cutTornLine truncates f, a regular file opened for writing at path,
// after its last '\n' (to empty if it has none) if it does not end with
// one. It reads back from the end in blocks, through a handle of its own.
func cutTornLine(f *os.File, path string) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	end := st.Size()
	if end == 0 || !st.Mode().IsRegular() {
		return nil
	}
	r, err := os.Open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	buf := make([]byte, min(end, 64<<10))
	for at := end; at > 0; {
		n := min(at, int64(len(buf)))
		at -= n
		if _, err := r.ReadAt(buf[:n], at); err != nil && err != io.EOF {
			return err
		}
		i := bytes.LastIndexByte(buf[:n], '\n')
		if at+int64(i)+1 == end {
			return nil // whole lines
		}
		if i >= 0 {
			return f.Truncate(at + int64(i) + 1)
		}
	}
	return f.Truncate(0)
}

// Sync makes every dead letter written so far durable (fsync), if any was
// written since the last Sync. The sink's goroutine calls it when a
// checkpoint barrier reaches it — after every stage has handled the records
// before the barrier — so that their dead letters are on disk by the time
// the checkpoint completes:
// a restore skips those records without handling them again (Mute), so
// they would otherwise be lost with the machine. It returns the fsync's
// error, wrapped.
func (p *ErrorPolicy) Sync() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sync()
}

func (p *ErrorPolicy) sync() error {
	if p.f == nil || !p.dirty {
		return nil
	}
	if err := p.f.Sync(); err != nil {
		return fmt.Errorf("dead letter file: %w", err)
	}
	p.dirty = false
	return nil
}

// Close makes the dead letters durable (Sync) and closes the file, if one
// was opened.
func (p *ErrorPolicy) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.f == nil {
		return nil
	}
	err := p.sync()
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	p.f = nil
	return err
}
