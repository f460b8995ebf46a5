package source

import (
	"bytes"
	"io"
	"os"
)

// bom is the UTF-8 byte order mark, which Excel's "CSV UTF-8" and some
// other tools write at the start of a file.
var bom = []byte{0xEF, 0xBB, 0xBF}

// bomReader reads r without a byte order mark at its start, so that
// encoding/csv and the JSONL parser never see one (encoding/csv would keep
// it in the first field, or call a quoted first field a bare quote).
//
// It decides on its first Read, which reads until it has three bytes, the
// input ends or the bytes read cannot start a mark; later Reads go straight
// to r. It sits below the source's bufio.Reader (whose large reads make the
// extra call per Read negligible), and it reads nothing before its first
// Read, so a source over a terminal or pipe does not block before the
// first record is asked for.
type bomReader struct {
	r       io.Reader
	head    []byte  // bytes read while deciding, not yet returned
	buf     [3]byte // head's storage
	err     error   // the error that ended the decision, returned after head
	decided bool
}

func newBOMReader(r io.Reader) *bomReader { return &bomReader{r: r} }

func (b *bomReader) Read(p []byte) (int, error) {
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

func (b *bomReader) decide() {
	b.decided = true
	b.head = b.buf[:0]
	for empty := 0; len(b.head) < len(bom) && bytes.HasPrefix(bom, b.head); {
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
	if bytes.Equal(b.head, bom) {
		b.head = nil
	}
}

// bomAt returns the length of the byte order mark at the start of f: 3 or
// 0. It reads with ReadAt, so f's offset does not move.
func bomAt(f *os.File) (int64, error) {
	var head [3]byte
	n, err := f.ReadAt(head[:], 0)
	if err != nil && err != io.EOF {
		return 0, err
	}
	if bytes.Equal(head[:n], bom) {
		return int64(len(bom)), nil
	}
	return 0, nil
}
