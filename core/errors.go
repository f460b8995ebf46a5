package core

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
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

// RecordError is the error a job fails with under the Fail policy: where the
// bad record is and why it is bad.
type RecordError struct {
	Input  string // file name, or an operator's name
	Pos    int64  // line or row, 1-based; 0 if unknown
	Reason error
}

func (e *RecordError) Error() string {
	if e.Pos > 0 {
		return fmt.Sprintf("%s:%d: %v", e.Input, e.Pos, e.Reason)
	}
	return fmt.Sprintf("%s: %v", e.Input, e.Reason)
}

func (e *RecordError) Unwrap() error { return e.Reason }

// ErrorPolicy applies a job's on_error policy. It is safe for concurrent
// use: bad records are rare, so the dead-letter file is behind a mutex.
type ErrorPolicy struct {
	Mode ErrorMode
	// Skipped and DeadLettered count bad records; Late counts records that
	// arrived after their windows fired; LateDeadLettered the subset of
	// those written to the dead-letter file.
	Skipped, DeadLettered, Late, LateDeadLettered atomic.Int64

	path string
	mu   sync.Mutex
	f    *os.File
	w    *bufio.Writer
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
// Fail, nil otherwise (or the dead-letter file's write error).
func (p *ErrorPolicy) Bad(input string, pos int64, raw string, reason error) error {
	switch p.Mode {
	case Skip:
		p.Skipped.Add(1)
		return nil
	case DeadLetter:
		p.DeadLettered.Add(1)
		return p.write(input, pos, raw, reason.Error())
	}
	return &RecordError{Input: input, Pos: pos, Reason: reason}
}

// LateRecord handles a record that came after its windows fired: counted,
// and written to the dead-letter file when toDeadLetter is set.
func (p *ErrorPolicy) LateRecord(input string, pos int64, raw string, toDeadLetter bool) error {
	p.Late.Add(1)
	if !toDeadLetter {
		return nil
	}
	p.LateDeadLettered.Add(1)
	return p.write(input, pos, raw, "late: its windows have fired")
}

type deadLetter struct {
	Input  string `json:"input"`
	Pos    int64  `json:"pos,omitempty"`
	Reason string `json:"reason"`
	Record string `json:"record"`
}

func (p *ErrorPolicy) write(input string, pos int64, raw, reason string) error {
	if p.path == "" {
		return errors.New("dead letter: no dead_letter_path set")
	}
	line, err := json.Marshal(deadLetter{Input: input, Pos: pos, Reason: reason, Record: raw})
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.f == nil {
		f, err := os.OpenFile(p.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("dead letter file: %w", err)
		}
		p.f, p.w = f, bufio.NewWriter(f)
	}
	p.w.Write(line)
	return p.w.WriteByte('\n')
}

// Close flushes and closes the dead-letter file, if one was opened.
func (p *ErrorPolicy) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.f == nil {
		return nil
	}
	err := p.w.Flush()
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	p.f = nil
	return err
}
