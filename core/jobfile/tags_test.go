package jobfile

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// YAML tags anywhere in a job file — on scalars, sequences and maps, at
// the top level and nested, in block and flow style, alone or before a
// value — are an error naming the file, line and column, never a panic
// of the YAML decoder (`pipeline: !x` used to dump goroutines).
func TestTags(t *testing.T) {
	const src = "source:\n  csv:\n    path: in.csv\n    columns: {k: string, v: int64}\n"
	const sink = "sink:\n  stdout: {}\n"
	for _, c := range []struct {
		name, text string
		line, col  int // 0: any position (an error of the YAML parser)
	}{
		{"pipeline", src + "pipeline: !x\n" + sink, 5, 11},
		{"post", src + "post: !x\n" + sink, 5, 7},
		{"pipeline list", src + "pipeline: !x [a]\n" + sink, 5, 11},
		{"pipeline map", src + "pipeline: !x {a: 1}\n" + sink, 5, 11},
		{"pipeline item", src + "pipeline:\n  - !x\n" + sink, 6, 5},
		{"pipeline item map", src + "pipeline:\n  - !x {filter: v > 1}\n" + sink, 6, 5},
		{"filter", src + "pipeline:\n  - filter: !x v > 1\n" + sink, 6, 13},
		{"region ops", src + "region:\n  ops: !foo\n" + sink, 6, 8},
		{"region ops flow", src + "region: {ops: !foo}\n" + sink, 0, 0},
		{"region ops flow spaced", src + "region: {ops: !foo }\n" + sink, 0, 0},
		{"region", src + "region: !r\n  ops: []\n" + sink, 5, 9},
		{"key_by", src + "region:\n  key_by: !k [k]\n  ops: []\n" + sink, 6, 11},
		{"channels", src + "region:\n  channels: !!int 2\n  ops: []\n" + sink, 6, 13},
		{"standard tag", src + "name: !!str job\n" + sink, 5, 7},
		{"source", "source: !s\n" + sink, 1, 9},
		{"source csv", "source:\n  csv: !c\n" + sink, 2, 8},
		{"columns", "source:\n  csv:\n    path: in.csv\n    columns: !m {k: string}\n" + sink, 4, 14},
		{"column type", "source:\n  csv:\n    path: in.csv\n    columns: {k: !t string}\n" + sink, 0, 0},
		{"sink", src + "sink: !x\n", 5, 7},
		{"sink stdout", src + "sink:\n  stdout: !x\n", 6, 11},
		{"window aggregates", src + "region:\n  key_by: [k]\n  ops:\n    - window:\n        size: 1h\n        aggregates: !a\n" + sink, 10, 21},
		{"anchor and tag", src + "pipeline: &p !x\n" + sink, 5, 14},
		{"key tag", src + "!x pipeline: []\n" + sink, 5, 1},
		{"runtime", src + sink + "runtime: !x\n", 7, 10},
		{"checkpoint", src + sink + "checkpoint: !x {dir: c}\n", 7, 13},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("panic: %v\n%s", r, c.text)
					}
				}()
				_, err = Parse("job.yaml", []byte(c.text))
			}()
			var je *Error
			if !errors.As(err, &je) {
				t.Fatalf("error %v (%T), want a *jobfile.Error\n%s", err, err, c.text)
			}
			if je.Line == 0 || je.Column == 0 {
				t.Fatalf("error %v names no line and column", err)
			}
			if c.line != 0 {
				if je.Line != c.line || je.Column != c.col || !strings.Contains(je.Msg, "YAML tag") {
					t.Errorf("error %v, want one at %d:%d about the tag", err, c.line, c.col)
				}
			}
			if !strings.HasPrefix(err.Error(), fmt.Sprintf("job.yaml:%d:%d: ", je.Line, je.Column)) {
				t.Errorf("error %q does not start with file:line:column", err)
			}
		})
	}
}
