package jobfile

import (
	"fmt"
	"math"
	"reflect"
	"strconv"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// checkIntegers walks the document beside the Spec type and returns an
// Error at the first value of an integer-typed key (channels, ring_size,
// count, …) that is not written as a YAML integer: decimal with an
// optional sign and _ separators, or 0x, 0o or 0b. go-yaml would otherwise
// truncate a float (2.5 → 2), and parse a string as a float and truncate
// that ("1e3", "2.5"). A float, even an integral one (8.0, 1e3), a quoted
// number, a bool, a list or a mapping is refused. A null (or an empty
// value) is left to the decoder: it means the key's default.
//
// It runs before decoding, on the parsed document, so it sees each value's
// syntax and position; parts of the document that do not match the Spec's
// shape are skipped and left to the decoder's errors.
func (f *File) checkIntegers() error {
	if f.ast == nil || len(f.ast.Docs) == 0 {
		return nil
	}
	return f.walkIntegers(f.ast.Docs[0].Body, reflect.TypeFor[Spec](), "")
}

var mapSliceType = reflect.TypeFor[yaml.MapSlice]()

func (f *File) walkIntegers(n ast.Node, t reflect.Type, path string) error {
	t = yamlType(t)
	n = unwrap(n)
	if n == nil || t == mapSliceType {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		for _, mv := range mappingPairs(n) {
			tk := mv.Key.GetToken()
			if tk == nil {
				continue
			}
			sf, ok := fieldByKey(t, tk.Value)
			if !ok {
				continue
			}
			p := tk.Value
			if path != "" {
				p = path + "." + tk.Value
			}
			if err := f.walkIntegers(mv.Value, sf.Type, p); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if sq, ok := n.(*ast.SequenceNode); ok {
			for i, v := range sq.Values {
				if err := f.walkIntegers(v, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if what := notInteger(n); what != "" {
			e := &Error{File: f.Path, Path: path, Msg: "expected an integer, not " + what}
			e.Line, e.Column = f.rawPos(position(n.GetToken()))
			return e
		}
	}
	return nil
}

// notInteger describes n if it is not an integer scalar (nor a null, nor
// an alias, which the decoder resolves), or returns "".
func notInteger(n ast.Node) string {
	switch v := n.(type) {
	case *ast.IntegerNode, *ast.NullNode, *ast.AliasNode:
		return ""
	case *ast.FloatNode, *ast.InfinityNode, *ast.NanNode, *ast.BoolNode:
		return v.GetToken().Value + integralHint(v.GetToken().Value)
	case *ast.StringNode:
		s := v.Value
		if _, err := strconv.ParseFloat(s, 64); err == nil && !isQuoted(v) {
			// go-yaml reads 1e3 as a string; it is a float all the same.
			return s + integralHint(s)
		}
		if _, err := strconv.ParseInt(s, 10, 64); err == nil && isQuoted(v) {
			return fmt.Sprintf("the string %q (write it without quotes)", s)
		}
		return describe(v)
	case *ast.MappingNode, *ast.MappingValueNode, *ast.SequenceNode, *ast.LiteralNode:
		return describe(v)
	}
	return "a " + n.Type().String()
}

// integralHint suggests the integer a float with an integral value (8.0,
// 1e3) stands for.
func integralHint(s string) string {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || x != math.Trunc(x) || math.Abs(x) > 1<<53 {
		return ""
	}
	return fmt.Sprintf(" (write %d)", int64(x))
}

// isQuoted reports whether a string scalar was written in quotes.
func isQuoted(n *ast.StringNode) bool {
	tk := n.GetToken()
	return tk != nil && (tk.Type == token.DoubleQuoteType || tk.Type == token.SingleQuoteType)
}
