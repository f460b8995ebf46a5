package source

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// Compression is how a text input (a CSV or JSON-lines file, stdin) is
// compressed: the job file's compression: key.
type Compression string

const (
	// CompressionAuto (also the zero value) decides by the file name's
	// extension (.gz, .zst or .zstd, .bz2, .xz), and for a name without one
	// by the first bytes of the input (the formats' magic numbers; see
	// Sniff). It is the default.
	CompressionAuto Compression = "auto"
	// CompressionNone reads the bytes as they are, whatever the name.
	CompressionNone  Compression = "none"
	CompressionGzip  Compression = "gzip"
	CompressionZstd  Compression = "zstd"
	CompressionBzip2 Compression = "bzip2"
	CompressionXz    Compression = "xz"
)

// Compressions lists the values of compression:, in the order messages
// name them.
var Compressions = []Compression{CompressionAuto, CompressionNone, CompressionGzip, CompressionZstd, CompressionBzip2, CompressionXz}

// ParseCompression returns the Compression named s ("" is auto), or an
// error that lists the names.
func ParseCompression(s string) (Compression, error) {
	if s == "" {
		return CompressionAuto, nil
	}
	for _, c := range Compressions {
		if string(c) == s {
			return c, nil
		}
	}
	names := make([]string, len(Compressions))
	for i, c := range Compressions {
		names[i] = string(c)
	}
	return "", fmt.Errorf("compression %q: expected one of %s", s, strings.Join(names, ", "))
}

// ByExtension is the compression a file name's extension says: gzip for
// .gz, zstd for .zst and .zstd, bzip2 for .bz2, xz for .xz (case
// insensitive), and "" for any other name.
func ByExtension(name string) Compression {
	n := strings.ToLower(name)
	switch {
	case strings.HasSuffix(n, ".gz"):
		return CompressionGzip
	case strings.HasSuffix(n, ".zst"), strings.HasSuffix(n, ".zstd"):
		return CompressionZstd
	case strings.HasSuffix(n, ".bz2"):
		return CompressionBzip2
	case strings.HasSuffix(n, ".xz"):
		return CompressionXz
	}
	return ""
}

// sniffLen is how many bytes Sniff needs to see.
const sniffLen = 10

// Sniff is the compression whose magic number the input starts with, or
// CompressionNone. head is the first bytes of the input (up to sniffLen;
// fewer match nothing longer). The magics cannot start a text file: gzip
// 1f 8b 08, zstd 28 b5 2f fd, xz fd 37 7a 58 5a 00 are not UTF-8 text, and
// bzip2 is matched with its first block's magic too ("BZh" 1–9, then
// 31 41 59 26 53 59), so a CSV whose header starts with "BZh9" stays a
// CSV.
func Sniff(head []byte) Compression {
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b, 0x08}):
		return CompressionGzip
	case bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return CompressionZstd
	case bytes.HasPrefix(head, []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}):
		return CompressionXz
	case len(head) >= 10 && bytes.HasPrefix(head, []byte("BZh")) && head[3] >= '1' && head[3] <= '9' &&
		bytes.Equal(head[4:10], []byte{0x31, 0x41, 0x59, 0x26, 0x53, 0x59}):
		return CompressionBzip2
	}
	return CompressionNone
}

// resolve is the compression to read an input named name with when c was
// asked for: the extension's under auto, else the magic number of head
// (Sniff).
func (c Compression) resolve(name string, head []byte) Compression {
	if c != "" && c != CompressionAuto {
		return c
	}
	if e := ByExtension(name); e != "" {
		return e
	}
	return Sniff(head)
}

// decompress returns a reader of the decompressed bytes of r, compressed
// with c (not auto; none returns r itself with a no-op closer). Its read
// errors name the compression ("gzip: invalid header"), and a stream that
// ends before its end marker is the error "gzip: truncated stream
// (unexpected EOF)", never a silent end of input. Close releases the
// decoder (zstd's goroutines), not r. A header error at the start of the
// stream is returned here.
func decompress(c Compression, r io.Reader) (io.ReadCloser, error) {
	var d io.Reader
	var closer func()
	switch c {
	case CompressionNone:
		return io.NopCloser(r), nil
	case CompressionGzip:
		z, err := gzip.NewReader(r)
		if err != nil {
			return nil, compressionError(c, err)
		}
		d, closer = z, func() { z.Close() }
	case CompressionZstd:
		// One decoding goroutine ahead of the reader: decompression
		// overlaps parsing without a goroutine per core.
		z, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, compressionError(c, err)
		}
		d, closer = z, z.Close
	case CompressionBzip2:
		d = bzip2.NewReader(r)
	case CompressionXz:
		z, err := xz.NewReader(r)
		if err != nil {
			return nil, compressionError(c, err)
		}
		d = z
	default:
		return nil, fmt.Errorf("compression %q: not a compression to read with", c)
	}
	return &decoded{r: d, c: c, close: closer}, nil
}

// decoded is a decompressing reader whose errors name the compression.
type decoded struct {
	r     io.Reader
	c     Compression
	close func()
	err   error // sticky: a decoder may not fail twice the same way
}

func (d *decoded) Read(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	n, err := d.r.Read(p)
	if err != nil && err != io.EOF {
		d.err = compressionError(d.c, err)
		err = d.err
	}
	return n, err
}

func (d *decoded) Close() error {
	if d.close != nil {
		d.close()
		d.close = nil
	}
	return nil
}

// ErrTruncated is wrapped by the read error of a compressed input that
// ends in the middle of its stream (a partly written or cut file).
var ErrTruncated = errors.New("truncated stream (unexpected EOF)")

// compressionError names the compression in a decoder's error, once: the
// decoders' own messages sometimes start with their name.
func compressionError(c Compression, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: %w", c, ErrTruncated)
	}
	msg := err.Error()
	for _, p := range []string{string(c) + ": ", "bzip2 data invalid: ", "xz: "} {
		if strings.HasPrefix(msg, p) {
			msg = strings.TrimPrefix(msg, p)
			if p == "bzip2 data invalid: " {
				msg = "invalid data: " + msg
			}
			break
		}
	}
	return fmt.Errorf("%s: %s", c, msg)
}

// spill returns f itself when it is not compressed (c auto: by name, then
// by its first bytes), else an unlinked temporary file (in os.TempDir,
// $TMPDIR) holding its decompressed bytes, from which the source reads as
// from a plain file: blocks, batches, Pos and positions are then exactly
// the plain file's. f is closed in that case, and on error. Decompression
// is one sequential pass before the source starts; it costs the
// decompressed size in temporary disk space until the source closes.
func spill(name string, f *os.File, c Compression) (*os.File, error) {
	head := make([]byte, sniffLen)
	n, _ := f.ReadAt(head, 0) // a read error shows on the first read
	c = c.resolve(name, head[:n])
	if c == CompressionNone {
		return f, nil
	}
	defer f.Close()
	d, err := decompress(c, bufio.NewReaderSize(f, readBufferSize))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	tmp, err := os.CreateTemp("", "streamd-decompressed-*")
	if err != nil {
		return nil, fmt.Errorf("%s: decompress to a temporary file: %w", c, err)
	}
	// Unlinked at once: the open file keeps its bytes until Close, and a
	// crash leaves nothing behind.
	os.Remove(tmp.Name())
	buf := make([]byte, 1<<20)
	if _, err := io.CopyBuffer(onlyWriter{tmp}, onlyReader{d}, buf); err != nil {
		tmp.Close()
		var we *writeError
		if errors.As(err, &we) {
			return nil, fmt.Errorf("%s: decompress to a temporary file in %s: %w", c, os.TempDir(), we.err)
		}
		return nil, err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		tmp.Close()
		return nil, err
	}
	return tmp, nil
}

// onlyReader and onlyWriter hide ReaderFrom and WriterTo from io.Copy so
// that it uses its buffer; onlyWriter marks its errors as the temporary
// file's.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

type onlyWriter struct{ w io.Writer }

func (o onlyWriter) Write(p []byte) (int, error) {
	n, err := o.w.Write(p)
	if err != nil {
		err = &writeError{err}
	}
	return n, err
}

type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }

// openDecompressed reads in, which is named name, decompressed as c says
// (auto: by name, then by the first bytes). It returns the reader, the
// compression used (none for plain bytes) and the decoder's closer.
func openDecompressed(name string, in io.Reader, c Compression) (io.Reader, Compression, io.Closer, error) {
	br := bufio.NewReaderSize(in, readBufferSize)
	head, _ := br.Peek(sniffLen) // an error shows again on the first read
	c = c.resolve(name, head)
	d, err := decompress(c, br)
	if err != nil {
		return nil, c, nil, err
	}
	if c == CompressionNone {
		return br, c, d, nil
	}
	return d, c, d, nil
}
