package source

import (
	"testing"

	"streamd/core"
)

// Fuzz targets (scripts/fuzz.sh fuzzes them; the test tiers run their
// seeds): a CSV or JSON-lines input read by blocks — several workers, and
// the parallel parser — gives the sequential reader's records, positions,
// dead letters and first error, whatever the bytes and the block size.

func FuzzCSVBlocks(f *testing.F) {
	for _, s := range []string{
		"a,1\nb,2\n",
		"a,\"x\ny\"\r\nb,\"q\"\"z\"\n",
		"\ufeffa,1\r\n\r\nb,x\n",
		"a,\"open\nb,2\n",
		"a,b\"ad\nc,\"x\"y\n",
		"\"\",\"\"\n,\n",
		// Unclosed quotes: past the line limit, past the byte limit, into
		// a stray quote, to the end, after a good multi-line field, and
		// as a header.
		"a,1\nb,\"open\nc,3\nd,4\ne,5\nf,6\n",
		"a,\"0123456789\n0123456789\n0123456789\n\"\nb,2\n",
		"a,\"open\nb,2\nc,\"3\"\nd,4\n",
		"a,1\nb,\"open\nc,3",
		"a,\"two\nlines\",\"open\nb,2\nc,3\nd,4\n",
		"a,\"x\"\"\nb,2\r\nc,\"\"\"\r\nd,4\n",
		// A CRLF inside quotes, which is part of the value.
		"a,\"x\r\ny\"\r\nb,\"\r\n\r\n\"\r\nc,\"z\r\n\"",
	} {
		f.Add(s, uint8(3), true, uint8(0))
		f.Add(s, uint8(5), false, uint8(9))
	}
	// quoted: the open-field limits, small so that fields reach them:
	// max_quoted_lines 1 + quoted%4, max_quoted_bytes 4 + quoted/4.
	f.Fuzz(func(t *testing.T, body string, size uint8, header bool, quoted uint8) {
		if len(body) > 2048 {
			return
		}
		content := body
		if header {
			content = "k,v\n" + body
		}
		opts := CSVOptions{Header: header, Columns: []core.Field{{Name: "k", Type: core.String}, {Name: "v", Type: core.Int64}},
			MaxQuotedLines: 1 + int(quoted%4), MaxQuotedBytes: 4 + int64(quoted/4)}
		checkTextBlocks(t, csvOpeners(t, content, opts, []int64{int64(size%32) + 1}))
	})
}

func FuzzJSONLBlocks(f *testing.F) {
	for _, s := range []string{
		"{\"k\":\"a\",\"v\":1}\n{\"k\":\"b\",\"v\":2}\n",
		"\ufeff{\"k\":\"a\",\"v\":1}\r\n\r\n{\"k\":\"b\"}\n",
		"{\"k\":\"a\",\"v\":1.5}\nnot json\n{\"k\":\"c\\u00e9\",\"v\":3}",
		"[1,2]\n{\"k\":null,\"v\":1}\n",
	} {
		f.Add(s, uint8(5))
	}
	f.Fuzz(func(t *testing.T, content string, size uint8) {
		if len(content) > 2048 {
			return
		}
		checkTextBlocks(t, jsonlOpeners(t, content, jsonlFields, []int64{int64(size%32) + 1}))
	})
}

// FuzzJSONBlocks: an array file or a stream of values, with paths and
// explode, read by blocks gives the sequential reader's records, lines,
// dead letters and first error whatever the bytes.
func FuzzJSONBlocks(f *testing.F) {
	for _, s := range []string{
		`[{"p":{"k":"a"},"c":[0,1]},{"p":{"k":"b"},"c":[0,2]}]`,
		"[{\"p\":{\"k\":\"]\\\",\"},\"c\":[0,\n1]},,{\"p\":null}] x",
		`{"p":{"k":"a"},"c":[0,1]}{"p":{"k":"b"}}17 "s" [`,
		"\ufeff{\"rows\":[{\"p\":{\"k\":\"a\"},\"c\":[1,2]},3]}\n{\"rows\":null}",
		`[{"rows":[{"p":{"k":"a"},"c":[1,2]}]},{"rows":{}}`,
	} {
		for mode := range uint8(4) {
			f.Add(s, uint8(3), mode)
		}
	}
	f.Fuzz(func(t *testing.T, content string, size, mode uint8) {
		if len(content) > 2048 {
			return
		}
		opts := JSONOptions{Format: JSONArray, Fields: pathFields}
		if mode&1 != 0 {
			opts.Format = JSONValues
		}
		if mode&2 != 0 {
			opts.Explode = "rows"
		}
		checkTextBlocks(t, jsonOpeners(t, content, opts, []int64{int64(size%32) + 1}))
	})
}
