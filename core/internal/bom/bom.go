// Package bom drops the UTF-8 byte order mark that Excel's "CSV UTF-8" and
// some other tools write at the start of a file, before a parser sees it
// (encoding/csv would keep it in the first field, or call a quoted first
// field a bare quote).
package bom

import (
	"bytes"
	"io"
	"os"
)

// mark is the UTF-8 byte order mark.
var mark = []byte{0xEF, 0xBB, 0xBF}

// Reader reads r without a byte order mark at its start.
//
// It decides on its first Read, which reads until it has three bytes, the
// input ends or the bytes read cannot start a mark; later Reads go straight
// to r. It sits below the caller's bufio.Reader (whose large reads make the
// extra call per Read negligible), and it reads nothing before its first
// Read, so a reader of a terminal or pipe does not block before the
// first record is asked for.
type Reader struct {
	r       io.Reader
	head    []byte  // bytes read while deciding, not yet returned
	buf     [3]byte // head's storage
	err     error   // the error that ended the decision, returned after head
	decided bool
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader) *Reader { return &Reader{r: r} }

func (b *Reader) Read(p []byte) (int, error) {
	if !b.decided {
		b.decide()
	}
	if len(b.head) > 0 {
		n := copy(p, b.head)
		b.head = b.head[n:]
		return n, nil
	}
	if b.err != nil {
		err := b.err
		b.err = nil
		return 0, err
	}
	return b.r.Read(p)
}

func (b *Reader) decide() {
	b.decided = true
	b.head = b.buf[:0]
	for empty := 0; len(b.head) < len(mark) && bytes.HasPrefix(mark, b.head); {
		n, err := b.r.Read(b.buf[len(b.head):])
		b.head = b.buf[:len(b.head)+n]
		if err != nil {
			b.err = err
			break
		}
		if n > 0 {
			empty = 0
		} else if empty++; empty == 100 { // as bufio.Reader does
			b.err = io.ErrNoProgress
			break
		}
	}
	if bytes.Equal(b.head, mark) {
		b.head = nil
	}
}

// At returns the length of the byte order mark at the start of f: 3 or 0.
// It reads with ReadAt, so f's offset does not move.
func At(f *os.File) (int64, error) {
	var head [3]byte
	n, err := f.ReadAt(head[:], 0)
	if err != nil && err != io.EOF {
		return 0, err
	}
	if bytes.Equal(head[:n], mark) {
		return int64(len(mark)), nil
	}
	return 0, nil
}
