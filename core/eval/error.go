package eval

import (
	"errors"
	"fmt"
	"strings"

	"github.com/expr-lang/expr/file"
)

// Error is an expression's syntax, type or run-time error with the position,
// within the expression's own source, where it was found. The job loader
// adds the position of the expression inside job.yaml to Line and Column
// to name the job file's line and column.
type Error struct {
	// Line is the 1-based line within the expression source.
	Line int
	// Column is the 1-based column within that line, counted in characters
	// (Unicode code points, as YAML parsers count them), not bytes.
	Column int
	// Offset is the 0-based byte offset of the position within the source.
	Offset int
	// Msg is the message, without position.
	Msg string
	// Src is the expression source.
	Src string

	err error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%d:%d: %s", e.Line, e.Column, e.Msg)
}

// Unwrap returns the underlying cause: ErrDivisionByZero for an integer
// division (%) by zero, the expr-lang error otherwise (if any).
func (e *Error) Unwrap() error { return e.err }

// Snippet returns the source line of the error with a caret under the
// column, for messages shown to a person.
func (e *Error) Snippet() string {
	lines := strings.Split(e.Src, "\n")
	if e.Line < 1 || e.Line > len(lines) {
		return ""
	}
	line := lines[e.Line-1]
	return line + "\n" + strings.Repeat(" ", max(e.Column-1, 0)) + "^"
}

// ErrDivisionByZero is the cause (errors.Is) of the run-time error of an
// integer modulo (a % b) with b == 0. Division with / is always floating
// point in expr, so 1/0 is +Inf, not an error.
var ErrDivisionByZero = errors.New("integer divide by zero")

// newError builds an *Error at character (rune) index from of src.
func newError(src string, from int, msg string, cause error) *Error {
	line, col, off := position(src, from)
	return &Error{Line: line, Column: col, Offset: off, Msg: msg, Src: src, err: cause}
}

// position maps a 0-based rune index (as expr-lang's file.Location counts)
// to a 1-based line, a 1-based rune column and a byte offset. An index past
// the end maps to just after the last character.
func position(src string, from int) (line, col, off int) {
	line, col = 1, 1
	n := 0
	for i, r := range src {
		if n == from {
			return line, col, i
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		n++
	}
	return line, col, len(src)
}

// fromExpr converts an error of expr-lang's parser, checker, optimizer or
// vm into an *Error. Errors without a location point at the start.
func fromExpr(src string, err error) *Error {
	var fe *file.Error
	if !errors.As(err, &fe) {
		return newError(src, 0, err.Error(), err)
	}
	var cause error = fe
	if fe.Prev != nil && strings.Contains(fe.Prev.Error(), "integer divide by zero") {
		cause = ErrDivisionByZero
	}
	return newError(src, fe.From, fe.Message, cause)
}
