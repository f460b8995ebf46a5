package source

import "bytes"

// recordCut returns the length of the longest prefix of b that ends at a
// CSV record boundary, or -1 if b holds no whole record. b must start at a
// record boundary.
//
// A record ends at a '\n' outside quotes. In RFC 4180 quoting every '"' of
// well-formed input opens or closes a quoted field, or is one of an escaped
// pair ("") inside one, so a '\n' is outside quotes exactly when the number
// of '"' before it, counted from b[0], is even. For malformed quoting (a
// bare quote in an unquoted field, text after a closing quote) the parity
// says nothing; encoding/csv then reports a csv.ParseError in the prefix,
// and the caller must not trust the cut (csvParallel re-reads from the
// block's start sequentially).
//
// Cost: one bytes.Count over b, then a walk back over the '\n's whose
// parity is odd; a block with no '"' needs only the last '\n'.
func recordCut(b []byte) int {
	i := bytes.LastIndexByte(b, '\n')
	if i < 0 {
		return -1
	}
	q := bytes.Count(b, quote)
	if q == 0 {
		return i + 1
	}
	after := bytes.Count(b[i+1:], quote) // quotes after the '\n' at i
	for (q-after)%2 != 0 {
		j := bytes.LastIndexByte(b[:i], '\n')
		if j < 0 {
			return -1
		}
		after += bytes.Count(b[j+1:i], quote)
		i = j
	}
	return i + 1
}

var quote = []byte{'"'}
