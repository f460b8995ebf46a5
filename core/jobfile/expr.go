package jobfile

import (
	"errors"
	"strings"

	"streamd/core"
	"streamd/core/eval"
)

// compileExpr compiles every expression of a job file (filter conditions,
// map fields, count_if conditions), each once: the program that type-checks
// it, whose errors point into the file, is the one the operator runs in
// every channel (a Program is safe for concurrent use). A test replaces it
// to see what is compiled.
var compileExpr = eval.Compile

// compile compiles an expression, reporting errors at their position inside
// the expression's YAML value.
func (f *File) compile(path, src string, in *core.Schema) (*eval.Program, error) {
	return f.compileIn(path, src, 0, len(src), in)
}

// compileIn compiles value[lo:hi], a part of the YAML value at path (the
// condition inside count_if(…)), reporting errors at their position in the
// file.
func (f *File) compileIn(path, value string, lo, hi int, in *core.Schema) (*eval.Program, error) {
	prog, err := compileExpr(value[lo:hi], in)
	if err == nil {
		return prog, nil
	}
	e := &Error{File: f.Path, Path: path, Msg: err.Error()}
	e.Line, e.Column = f.pos(path)
	var ee *eval.Error
	if errors.As(err, &ee) {
		e.Msg = ee.Msg
		if e.Line > 0 {
			e.Line, e.Column = f.valuePos(e.Line, e.Column, value, lo+ee.Offset)
		}
	}
	e.Line, e.Column = f.rawPos(e.Line, e.Column)
	return nil, e
}

// valuePos maps byte offset off of a scalar's decoded value to its line and
// column in the file, the scalar starting at line:col. Folding, indentation
// and quotes change only whitespace and delimiters, so it counts the
// value's non-blank characters before off and walks the same number of
// them in the file (a backslash escape or a doubled single quote counting
// as one). An offset at the end of the value maps to just after its last
// character.
func (f *File) valuePos(line, col int, value string, off int) (int, int) {
	off = min(off, len(value))
	want := 0
	for _, r := range value[:off] {
		if !isBlank(r) {
			want++
		}
	}
	atEnd := strings.TrimFunc(value[off:], isBlank) == ""
	lines := f.lines()
	if line-1 >= len(lines) {
		return line, col
	}
	rs := []rune(lines[line-1])
	if col-1 >= len(rs) {
		return line, col
	}
	quote := rune(0)
	i := col - 1
	switch rs[i] {
	case '|', '>': // block scalar: the value starts on the next line
		line, i, rs = line+1, 0, nil
		if line-1 < len(lines) {
			rs = []rune(lines[line-1])
		}
	case '"', '\'':
		quote = rs[i]
		i++
	}
	endLine, endCol := line, i+1
	seen := 0
	for line-1 < len(lines) {
		for i < len(rs) {
			r := rs[i]
			if isBlank(r) {
				i++
				continue
			}
			if seen == want && !atEnd {
				return line, i + 1
			}
			n := 1
			switch {
			case quote == '"' && r == '\\' && i+1 < len(rs):
				n = map[rune]int{'x': 4, 'u': 6, 'U': 10}[rs[i+1]]
				n = max(n, 2)
			case quote == '\'' && r == '\'' && i+1 < len(rs) && rs[i+1] == '\'':
				n = 2
			}
			i += n
			seen++
			endLine, endCol = line, i+1
			if seen == want && atEnd {
				return endLine, endCol
			}
		}
		line, i = line+1, 0
		if line-1 < len(lines) {
			rs = []rune(lines[line-1])
		}
	}
	return endLine, endCol
}

func isBlank(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }
