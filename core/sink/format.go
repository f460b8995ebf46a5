package sink

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"streamd/core"
)

// CSVOptions configures the CSV format.
type CSVOptions struct {
	// Header writes the field names as the first line. The zero value is
	// false; the job file's default is true.
	Header bool
	// Delimiter separates fields; 0 means ','. It may not be '"', '\r',
	// '\n' or an invalid rune.
	Delimiter rune
}

// format turns records into text.
type format interface {
	// open prepares for schema s and appends the header, if any.
	open(dst []byte, s *core.Schema) ([]byte, error)
	// batch appends every record of b.
	batch(dst []byte, b *core.Batch) []byte
}

// csvFormatOf makes CSV formats with opts.
func csvFormatOf(opts CSVOptions) func() format {
	return func() format { return &csvFormat{opts: opts} }
}

func jsonFormatOf() format { return &jsonFormat{} }

// csvFormat writes RFC 4180 CSV with "\n" line ends: a field is quoted only
// when it holds the delimiter, a quote, CR or LF (quotes doubled inside).
// A record of one empty field is written as "" so that it does not read
// back as an empty line, which CSV readers skip. A null is an empty field
// (as DuckDB and PostgreSQL write it), "" for a record of one field.
type csvFormat struct {
	opts     CSVOptions
	delim    string
	ascii    byte // the delimiter, when it is one byte
	types    []core.Type
	nullable []bool // the field may hold core.Null
	numeri   bool   // the delimiter can occur in a formatted non-string value
	// The last timestamp formatted in each column and its text: rows in
	// time order repeat timestamps (window bounds), and formatting one
	// costs more than the rest of a row.
	tsLast []int64
	tsText [][]byte
}

func (c *csvFormat) open(dst []byte, s *core.Schema) ([]byte, error) {
	d := c.opts.Delimiter
	if d == 0 {
		d = ','
	}
	if d == '"' || d == '\r' || d == '\n' || !utf8.ValidRune(d) || d == utf8.RuneError {
		return dst, fmt.Errorf("invalid delimiter %q", d)
	}
	c.delim = string(d)
	if d < utf8.RuneSelf {
		c.ascii = byte(d)
	}
	// Numbers, timestamps and bools are made of ASCII letters, digits and
	// these signs; any other delimiter never needs checking for in them.
	c.numeri = d < utf8.RuneSelf && (d >= '0' && d <= '9' || d|0x20 >= 'a' && d|0x20 <= 'z' || strings.ContainsRune("+-.:", d))
	c.types, c.nullable = c.types[:0], c.nullable[:0]
	for _, f := range s.Fields {
		c.types = append(c.types, f.Type)
		c.nullable = append(c.nullable, f.Nullable)
	}
	c.tsLast = make([]int64, len(s.Fields))
	c.tsText = make([][]byte, len(s.Fields))
	if c.opts.Header {
		lineStart := len(dst)
		for i, f := range s.Fields {
			if i > 0 {
				dst = append(dst, c.delim...)
			}
			dst = c.field(dst, f.Name)
		}
		if len(dst) == lineStart {
			dst = append(dst, `""`...)
		}
		dst = append(dst, '\n')
	}
	return dst, nil
}

func (c *csvFormat) needsQuotes(s string) bool {
	if c.ascii != 0 {
		d := c.ascii
		for i := 0; i < len(s); i++ {
			if b := s[i]; b == d || b == '"' || b == '\r' || b == '\n' {
				return true
			}
		}
		return false
	}
	return strings.Contains(s, c.delim) || strings.ContainsAny(s, "\"\r\n")
}

// field appends s, quoted if it needs to be.
func (c *csvFormat) field(dst []byte, s string) []byte {
	if !c.needsQuotes(s) {
		return append(dst, s...)
	}
	dst = append(dst, '"')
	for {
		i := strings.IndexByte(s, '"')
		if i < 0 {
			break
		}
		dst = append(dst, s[:i+1]...)
		dst = append(dst, '"')
		s = s[i+1:]
	}
	dst = append(dst, s...)
	return append(dst, '"')
}

func (c *csvFormat) batch(dst []byte, b *core.Batch) []byte {
	w := len(c.types)
	for i := 0; i < b.Len; i++ {
		row := b.Vals[i*w : (i+1)*w]
		lineStart := len(dst)
		for j, t := range c.types {
			if j > 0 {
				dst = append(dst, c.delim...)
			}
			if c.nullable[j] && row[j].IsNull() {
				continue
			}
			if t == core.String {
				dst = c.field(dst, row[j].Str())
				continue
			}
			if t == core.Timestamp && !c.numeri {
				if ns := row[j].Time(); c.tsText[j] != nil && ns == c.tsLast[j] {
					dst = append(dst, c.tsText[j]...)
				} else {
					start := len(dst)
					dst = core.AppendText(dst, t, row[j])
					c.tsLast[j], c.tsText[j] = ns, append(c.tsText[j][:0], dst[start:]...)
				}
				continue
			}
			start := len(dst)
			dst = core.AppendText(dst, t, row[j])
			if c.numeri && c.needsQuotes(string(dst[start:])) {
				// Rare (a delimiter such as ':' or '-'): requote the text
				// just written.
				text := string(dst[start:])
				dst = c.field(dst[:start], text)
			}
		}
		if w == 1 && len(dst) == lineStart {
			dst = append(dst, `""`...)
		}
		dst = append(dst, '\n')
	}
	return dst
}

// jsonFormat writes one JSON object per record, members in schema order:
// strings escaped per RFC 8259 (invalid UTF-8 as U+FFFD, U+2028 and U+2029
// escaped for JavaScript), non-finite floats as null, timestamps as RFC
// 3339 strings, nulls as null.
type jsonFormat struct {
	types    []core.Type
	nullable []bool   // the field may hold core.Null
	prefix   [][]byte // `{"name":` for the first member, `,"name":` after
}

func (j *jsonFormat) open(dst []byte, s *core.Schema) ([]byte, error) {
	j.types, j.prefix, j.nullable = j.types[:0], j.prefix[:0], j.nullable[:0]
	for i, f := range s.Fields {
		p := []byte{','}
		if i == 0 {
			p[0] = '{'
		}
		p = appendJSONString(p, f.Name)
		j.prefix = append(j.prefix, append(p, ':'))
		j.types = append(j.types, f.Type)
		j.nullable = append(j.nullable, f.Nullable)
	}
	return dst, nil
}

func (j *jsonFormat) batch(dst []byte, b *core.Batch) []byte {
	w := len(j.types)
	for i := 0; i < b.Len; i++ {
		row := b.Vals[i*w : (i+1)*w]
		if w == 0 {
			dst = append(dst, '{')
		}
		for k, t := range j.types {
			dst = append(dst, j.prefix[k]...)
			v := row[k]
			if j.nullable[k] && v.IsNull() {
				dst = append(dst, "null"...)
				continue
			}
			switch t {
			case core.String:
				dst = appendJSONString(dst, v.Str())
			case core.Float64:
				dst = appendJSONFloat(dst, v.Float())
			case core.Timestamp:
				dst = append(dst, '"')
				dst = core.AppendText(dst, t, v)
				dst = append(dst, '"')
			default:
				dst = core.AppendText(dst, t, v)
			}
		}
		dst = append(dst, '}', '\n')
	}
	return dst
}

// appendJSONFloat appends f as encoding/json does: plain decimal for
// 1e-6 ≤ |f| < 1e21, exponent form otherwise, null for NaN and ±Inf
// (which JSON cannot represent).
func appendJSONFloat(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	abs := math.Abs(f)
	fmt := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		fmt = 'e'
	}
	dst = strconv.AppendFloat(dst, f, fmt, -1, 64)
	if fmt == 'e' {
		// 1e-07 → 1e-7
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
