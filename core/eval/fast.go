package eval

import (
	"math"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/expr-lang/expr/ast"

	"streamd/core"
)

// The fast path: the checked expr-lang AST is compiled into a tree of typed
// Go closures that read fields straight from a record's []core.Value. Each
// node is one closure of its kind's Go type, so evaluation is a few direct
// calls with no boxing and no allocation (string concatenation, lower and
// upper excepted: they build strings). Nodes with a field and a constant
// operand (delay > 15, distance * 2) get closures specialised for that
// shape. Sub-trees without fields are folded to constants at compile time.
//
// The semantics are expr-lang's (vm/runtime): integer arithmetic wraps,
// mixed int/float operands are compared and combined as float64, / is always
// float division, % by zero is a run-time error, timestamps compare by
// instant, ts - ts is a saturating Duration. A property test checks the fast
// path against the vm on random records and expressions.

// kind is the Go type of a node's result.
type kind uint8

const (
	kBool   kind = iota + 1
	kInt         // int64, in node.i
	kFloat       // float64, in node.f
	kString      // string, in node.s
	kTime        // ns since the epoch, in node.i
	kDur         // time.Duration in ns, in node.i
)

func (k kind) coreType() core.Type {
	switch k {
	case kBool:
		return core.Bool
	case kInt, kDur:
		return core.Int64
	case kFloat:
		return core.Float64
	case kString:
		return core.String
	case kTime:
		return core.Timestamp
	}
	return core.Invalid
}

func (k kind) numeric() bool { return k == kInt || k == kFloat }

type row = []core.Value

// node is one compiled sub-expression: exactly one of b, i, f, s is set,
// as its kind says.
type node struct {
	k kind
	b func(row) bool
	i func(row) int64
	f func(row) float64
	s func(row) string

	field int  // ≥ 0: the node is a plain load of this field
	konst bool // the node reads no field (its value is fixed)
}

func (n *node) value(r row) core.Value {
	switch n.k {
	case kBool:
		return core.BoolValue(n.b(r))
	case kInt, kDur:
		return core.IntValue(n.i(r))
	case kTime:
		return core.TimeValue(n.i(r))
	case kFloat:
		return core.FloatValue(n.f(r))
	case kString:
		return core.StringValue(n.s(r))
	}
	return core.Value{}
}

func constBool(v bool) *node {
	return &node{k: kBool, b: func(row) bool { return v }, field: -1, konst: true}
}

func constInt(k kind, v int64) *node {
	return &node{k: k, i: func(row) int64 { return v }, field: -1, konst: true}
}

func constFloat(v float64) *node {
	return &node{k: kFloat, f: func(row) float64 { return v }, field: -1, konst: true}
}

func constString(v string) *node {
	return &node{k: kString, s: func(row) string { return v }, field: -1, konst: true}
}

func fieldNode(i int, t core.Type) *node {
	n := &node{field: i}
	switch t {
	case core.Int64:
		n.k, n.i = kInt, func(r row) int64 { return r[i].Int() }
	case core.Timestamp:
		n.k, n.i = kTime, func(r row) int64 { return r[i].Time() }
	case core.Float64:
		n.k, n.f = kFloat, func(r row) float64 { return r[i].Float() }
	case core.String:
		n.k, n.s = kString, func(r row) string { return r[i].Str() }
	case core.Bool:
		n.k, n.b = kBool, func(r row) bool { return r[i].Bool() }
	default:
		return nil
	}
	return n
}

// composite wraps a closure built from children; it is folded to a
// constant when all children are constant.
func composite(k kind, fn any, kids ...*node) *node {
	n := &node{k: k, field: -1, konst: true}
	for _, c := range kids {
		n.konst = n.konst && c.konst
	}
	switch k {
	case kBool:
		n.b = fn.(func(row) bool)
	case kInt, kTime, kDur:
		n.i = fn.(func(row) int64)
	case kFloat:
		n.f = fn.(func(row) float64)
	case kString:
		n.s = fn.(func(row) string)
	}
	if n.konst {
		return fold(n)
	}
	return n
}

// fold evaluates a constant node once; a node that fails (len("") % 0) is
// kept, no longer marked constant, to fail at run time as the vm does.
func fold(n *node) (out *node) {
	defer func() {
		if recover() != nil {
			n.konst = false
			out = n
		}
	}()
	switch n.k {
	case kBool:
		return constBool(n.b(nil))
	case kInt, kTime, kDur:
		return constInt(n.k, n.i(nil))
	case kFloat:
		return constFloat(n.f(nil))
	case kString:
		return constString(n.s(nil))
	}
	return n
}

// asFloat returns n's value as float64 (n is kInt or kFloat).
func asFloat(n *node) func(row) float64 {
	if n.k == kFloat {
		return n.f
	}
	if n.field >= 0 {
		i := n.field
		return func(r row) float64 { return float64(r[i].Int()) }
	}
	if n.konst {
		c := float64(n.i(nil))
		return func(row) float64 { return c }
	}
	g := n.i
	return func(r row) float64 { return float64(g(r)) }
}

func asFloatNode(n *node) *node {
	if n.k == kFloat {
		return n
	}
	return &node{k: kFloat, f: asFloat(n), field: -1, konst: n.konst}
}

type fastCompiler struct {
	schema  *core.Schema
	mayFail bool
}

// compile compiles n; ok is false when n is outside the fast subset. root
// is set for the nodes whose value is the expression's result (the root and
// the branches of a ternary at the root): there a ternary of int and float
// gives float.
func (c *fastCompiler) compile(n ast.Node, root bool) (*node, bool) {
	var out *node
	switch n := n.(type) {
	case *ast.IdentifierNode:
		i := c.schema.Index(n.Value)
		if i < 0 {
			return nil, false
		}
		out = fieldNode(i, c.schema.Fields[i].Type)
	case *ast.IntegerNode:
		out = constInt(kInt, int64(n.Value))
	case *ast.FloatNode:
		out = constFloat(n.Value)
	case *ast.StringNode:
		out = constString(n.Value)
	case *ast.BoolNode:
		out = constBool(n.Value)
	case *ast.UnaryNode:
		out = c.unary(n)
	case *ast.BinaryNode:
		out = c.binary(n)
	case *ast.ConditionalNode:
		out = c.conditional(n, root)
	case *ast.BuiltinNode:
		out = c.builtin(n)
	}
	return out, out != nil
}

func (c *fastCompiler) unary(n *ast.UnaryNode) *node {
	x, ok := c.compile(n.Node, false)
	if !ok {
		return nil
	}
	switch n.Operator {
	case "!", "not":
		if x.k == kBool {
			g := x.b
			return composite(kBool, func(r row) bool { return !g(r) }, x)
		}
	case "-":
		switch x.k {
		case kInt, kDur:
			g := x.i
			return composite(x.k, func(r row) int64 { return -g(r) }, x)
		case kFloat:
			g := x.f
			return composite(kFloat, func(r row) float64 { return -g(r) }, x)
		}
	case "+":
		if x.k.numeric() || x.k == kDur {
			return x
		}
	}
	return nil
}

func (c *fastCompiler) binary(n *ast.BinaryNode) *node {
	switch n.Operator {
	case "in":
		return c.in(n)
	case "matches":
		return c.matches(n)
	}
	l, ok := c.compile(n.Left, false)
	if !ok {
		return nil
	}
	r, ok := c.compile(n.Right, false)
	if !ok {
		return nil
	}
	switch op := n.Operator; op {
	case "&&", "and", "||", "or":
		if l.k != kBool || r.k != kBool {
			return nil
		}
		and := op == "&&" || op == "and"
		// As expr-lang's optimizer: x && false is false and x || true is
		// true without evaluating x; x && true and x || false are x.
		if r.konst {
			if r.b(nil) != and {
				return constBool(!and)
			}
			return l
		}
		a, b := l.b, r.b
		if and {
			return composite(kBool, func(x row) bool { return a(x) && b(x) }, l, r)
		}
		return composite(kBool, func(x row) bool { return a(x) || b(x) }, l, r)
	case "==", "!=", "<", ">", "<=", ">=":
		return compare(op, l, r)
	case "+", "-", "*", "/", "**", "^":
		return arithmetic(op, l, r)
	case "%":
		if l.k != kInt || r.k != kInt {
			return nil
		}
		a, b := l.i, r.i
		if r.konst {
			if d := b(nil); d != 0 {
				return composite(kInt, func(x row) int64 { return a(x) % d }, l, r)
			}
		}
		c.mayFail = true
		from := n.Location().From
		return composite(kInt, func(x row) int64 {
			av, d := a(x), b(x)
			if d == 0 {
				panic(runtimeError{from: from, err: ErrDivisionByZero})
			}
			return av % d
		}, l, r)
	case "contains", "startsWith", "endsWith":
		if l.k != kString || r.k != kString {
			return nil
		}
		a, b := l.s, r.s
		var f func(string, string) bool
		switch op {
		case "contains":
			f = strings.Contains
		case "startsWith":
			f = strings.HasPrefix
		default:
			f = strings.HasSuffix
		}
		return composite(kBool, func(x row) bool { return f(a(x), b(x)) }, l, r)
	}
	return nil
}

// compare compiles ==, !=, <, >, <=, >=.
func compare(op string, l, r *node) *node {
	switch {
	case l.k == kInt && r.k == kInt, l.k == kTime && r.k == kTime, l.k == kDur && r.k == kDur:
		return intCompare(op, l, r)
	case l.k.numeric() && r.k.numeric():
		return floatCompare(op, asFloatNode(l), asFloatNode(r))
	case l.k == kString && r.k == kString:
		if l.konst && r.field >= 0 {
			l, r, op = r, l, flip(op)
		}
		if l.field >= 0 && r.konst && (op == "==" || op == "!=") {
			i, v := l.field, r.s(nil)
			if op == "==" {
				return composite(kBool, func(x row) bool { return x[i].Str() == v }, l, r)
			}
			return composite(kBool, func(x row) bool { return x[i].Str() != v }, l, r)
		}
		if r.konst {
			return composite(kBool, cmpConst(op, l.s, r.s(nil)), l, r)
		}
		return composite(kBool, cmp(op, l.s, r.s), l, r)
	case l.k == kBool && r.k == kBool && (op == "==" || op == "!="):
		a, b := l.b, r.b
		if op == "==" {
			return composite(kBool, func(x row) bool { return a(x) == b(x) }, l, r)
		}
		return composite(kBool, func(x row) bool { return a(x) != b(x) }, l, r)
	}
	return nil
}

// flip turns a op b into b flip(op) a.
func flip(op string) string {
	switch op {
	case "<":
		return ">"
	case ">":
		return "<"
	case "<=":
		return ">="
	case ">=":
		return "<="
	}
	return op
}

func intCompare(op string, l, r *node) *node {
	if l.konst && !r.konst {
		l, r, op = r, l, flip(op)
	}
	switch {
	case l.field >= 0 && r.konst:
		return composite(kBool, intFieldCmp(op, l.field, r.i(nil)), l, r)
	case r.konst:
		return composite(kBool, cmpConst(op, l.i, r.i(nil)), l, r)
	}
	return composite(kBool, cmp(op, l.i, r.i), l, r)
}

func floatCompare(op string, l, r *node) *node {
	if l.konst && !r.konst {
		l, r, op = r, l, flip(op)
	}
	switch {
	case l.field >= 0 && r.konst:
		return composite(kBool, floatFieldCmp(op, l.field, r.f(nil)), l, r)
	case r.konst:
		return composite(kBool, cmpConst(op, l.f, r.f(nil)), l, r)
	}
	return composite(kBool, cmp(op, l.f, r.f), l, r)
}

type ordered interface{ int64 | float64 | string }

func cmp[T ordered](op string, a, b func(row) T) func(row) bool {
	switch op {
	case "==":
		return func(x row) bool { return a(x) == b(x) }
	case "!=":
		return func(x row) bool { return a(x) != b(x) }
	case "<":
		return func(x row) bool { return a(x) < b(x) }
	case ">":
		return func(x row) bool { return a(x) > b(x) }
	case "<=":
		return func(x row) bool { return a(x) <= b(x) }
	}
	return func(x row) bool { return a(x) >= b(x) }
}

func cmpConst[T ordered](op string, a func(row) T, c T) func(row) bool {
	switch op {
	case "==":
		return func(x row) bool { return a(x) == c }
	case "!=":
		return func(x row) bool { return a(x) != c }
	case "<":
		return func(x row) bool { return a(x) < c }
	case ">":
		return func(x row) bool { return a(x) > c }
	case "<=":
		return func(x row) bool { return a(x) <= c }
	}
	return func(x row) bool { return a(x) >= c }
}

// intFieldCmp compares an int64 (or timestamp) field with a constant: the
// shape of most filter conditions, one closure call per record.
func intFieldCmp(op string, i int, c int64) func(row) bool {
	switch op {
	case "==":
		return func(x row) bool { return x[i].Int() == c }
	case "!=":
		return func(x row) bool { return x[i].Int() != c }
	case "<":
		return func(x row) bool { return x[i].Int() < c }
	case ">":
		return func(x row) bool { return x[i].Int() > c }
	case "<=":
		return func(x row) bool { return x[i].Int() <= c }
	}
	return func(x row) bool { return x[i].Int() >= c }
}

func floatFieldCmp(op string, i int, c float64) func(row) bool {
	switch op {
	case "==":
		return func(x row) bool { return x[i].Float() == c }
	case "!=":
		return func(x row) bool { return x[i].Float() != c }
	case "<":
		return func(x row) bool { return x[i].Float() < c }
	case ">":
		return func(x row) bool { return x[i].Float() > c }
	case "<=":
		return func(x row) bool { return x[i].Float() <= c }
	}
	return func(x row) bool { return x[i].Float() >= c }
}

// arithmetic compiles + - * / ** ^ over numbers, + over strings, the
// time/duration forms of + and -, and a duration times an integer.
func arithmetic(op string, l, r *node) *node {
	switch {
	case l.k == kInt && r.k == kInt && (op == "+" || op == "-" || op == "*"):
		return composite(kInt, intArith(op, l, r), l, r)
	case l.k.numeric() && r.k.numeric():
		switch op {
		case "**", "^":
			a, b := asFloat(l), asFloat(r)
			return composite(kFloat, func(x row) float64 { return math.Pow(a(x), b(x)) }, l, r)
		}
		return composite(kFloat, floatArith(op, asFloatNode(l), asFloatNode(r)), l, r)
	case l.k == kString && r.k == kString && op == "+":
		a, b := l.s, r.s
		return composite(kString, func(x row) string { return a(x) + b(x) }, l, r)
	case op == "+" && l.k == kTime && r.k == kDur, op == "+" && l.k == kDur && r.k == kTime:
		return composite(kTime, arith(op, l.i, r.i), l, r)
	case op == "+" && l.k == kDur && r.k == kDur, op == "-" && l.k == kDur && r.k == kDur,
		op == "*" && l.k == kDur && r.k == kInt, op == "*" && l.k == kInt && r.k == kDur:
		// A duration times an integer (duration("1s") * secs) is a
		// duration, wrapping as expr-lang's time.Duration product does.
		return composite(kDur, arith(op, l.i, r.i), l, r)
	case op == "-" && l.k == kTime && r.k == kDur:
		return composite(kTime, arith(op, l.i, r.i), l, r)
	case op == "-" && l.k == kTime && r.k == kTime:
		a, b := l.i, r.i
		return composite(kDur, func(x row) int64 { return subSaturating(a(x), b(x)) }, l, r)
	}
	return nil
}

// subSaturating is time.Time.Sub on ns: the difference, clamped to the
// Duration range.
func subSaturating(a, b int64) int64 {
	d := a - b
	switch {
	case b < 0 && d < a:
		return math.MaxInt64
	case b > 0 && d > a:
		return math.MinInt64
	}
	return d
}

type number interface{ int64 | float64 }

func arith[T number](op string, a, b func(row) T) func(row) T {
	switch op {
	case "+":
		return func(x row) T { return a(x) + b(x) }
	case "-":
		return func(x row) T { return a(x) - b(x) }
	case "*":
		return func(x row) T { return a(x) * b(x) }
	}
	return func(x row) T { return a(x) / b(x) }
}

func arithConstR[T number](op string, a func(row) T, c T) func(row) T {
	switch op {
	case "+":
		return func(x row) T { return a(x) + c }
	case "-":
		return func(x row) T { return a(x) - c }
	case "*":
		return func(x row) T { return a(x) * c }
	}
	return func(x row) T { return a(x) / c }
}

func arithConstL[T number](op string, c T, b func(row) T) func(row) T {
	switch op {
	case "+":
		return func(x row) T { return c + b(x) }
	case "-":
		return func(x row) T { return c - b(x) }
	case "*":
		return func(x row) T { return c * b(x) }
	}
	return func(x row) T { return c / b(x) }
}

func intArith(op string, l, r *node) func(row) int64 {
	switch {
	case l.field >= 0 && r.konst:
		i, c := l.field, r.i(nil)
		switch op {
		case "+":
			return func(x row) int64 { return x[i].Int() + c }
		case "-":
			return func(x row) int64 { return x[i].Int() - c }
		}
		return func(x row) int64 { return x[i].Int() * c }
	case r.konst:
		return arithConstR(op, l.i, r.i(nil))
	case l.konst:
		return arithConstL(op, l.i(nil), r.i)
	}
	return arith(op, l.i, r.i)
}

func floatArith(op string, l, r *node) func(row) float64 {
	switch {
	case l.field >= 0 && r.konst:
		i, c := l.field, r.f(nil)
		switch op {
		case "+":
			return func(x row) float64 { return x[i].Float() + c }
		case "-":
			return func(x row) float64 { return x[i].Float() - c }
		case "*":
			return func(x row) float64 { return x[i].Float() * c }
		}
		return func(x row) float64 { return x[i].Float() / c }
	case r.konst:
		return arithConstR(op, l.f, r.f(nil))
	case l.konst:
		return arithConstL(op, l.f(nil), r.f)
	}
	return arith(op, l.f, r.f)
}

// in compiles x in [literal, …]: a set of constants, scanned or hashed.
func (c *fastCompiler) in(n *ast.BinaryNode) *node {
	arr, ok := n.Right.(*ast.ArrayNode)
	if !ok {
		return nil
	}
	l, ok := c.compile(n.Left, false)
	if !ok {
		return nil
	}
	elems := make([]*node, len(arr.Nodes))
	for i, e := range arr.Nodes {
		if elems[i], ok = c.compile(e, false); !ok || !elems[i].konst {
			return nil
		}
	}
	switch {
	case l.k == kString:
		set := make([]string, 0, len(elems))
		for _, e := range elems {
			if e.k != kString {
				return nil
			}
			set = append(set, e.s(nil))
		}
		a := l.s
		if len(set) > 8 {
			m := make(map[string]struct{}, len(set))
			for _, s := range set {
				m[s] = struct{}{}
			}
			return composite(kBool, func(x row) bool { _, ok := m[a(x)]; return ok }, l)
		}
		return composite(kBool, func(x row) bool {
			v := a(x)
			for _, s := range set {
				if v == s {
					return true
				}
			}
			return false
		}, l)
	case l.k.numeric():
		var ints []int64
		var floats []float64
		for _, e := range elems {
			switch {
			case e.k == kInt && l.k == kInt:
				ints = append(ints, e.i(nil))
			case e.k.numeric():
				floats = append(floats, asFloat(e)(nil))
			default:
				return nil
			}
		}
		if l.k == kFloat {
			a := l.f
			return composite(kBool, func(x row) bool {
				v := a(x)
				for _, f := range floats {
					if v == f {
						return true
					}
				}
				return false
			}, l)
		}
		a := l.i
		if len(ints) > 8 && len(floats) == 0 {
			m := make(map[int64]struct{}, len(ints))
			for _, i := range ints {
				m[i] = struct{}{}
			}
			return composite(kBool, func(x row) bool { _, ok := m[a(x)]; return ok }, l)
		}
		return composite(kBool, func(x row) bool {
			v := a(x)
			for _, i := range ints {
				if v == i {
					return true
				}
			}
			fv := float64(v)
			for _, f := range floats {
				if fv == f {
					return true
				}
			}
			return false
		}, l)
	}
	return nil
}

// matches compiles s matches "literal regexp"; the regexp is compiled once.
func (c *fastCompiler) matches(n *ast.BinaryNode) *node {
	pat, ok := n.Right.(*ast.StringNode)
	if !ok {
		return nil
	}
	l, ok := c.compile(n.Left, false)
	if !ok || l.k != kString {
		return nil
	}
	re, err := regexp.Compile(pat.Value)
	if err != nil {
		return nil
	}
	a := l.s
	return composite(kBool, func(x row) bool { return re.MatchString(a(x)) }, l)
}

func (c *fastCompiler) conditional(n *ast.ConditionalNode, root bool) *node {
	cond, ok := c.compile(n.Cond, false)
	if !ok || cond.k != kBool {
		return nil
	}
	a, ok := c.compile(n.Exp1, root)
	if !ok {
		return nil
	}
	b, ok := c.compile(n.Exp2, root)
	if !ok {
		return nil
	}
	if a.k != b.k {
		if !root || !a.k.numeric() || !b.k.numeric() {
			return nil
		}
		a, b = asFloatNode(a), asFloatNode(b)
	}
	p := cond.b
	switch a.k {
	case kBool:
		x, y := a.b, b.b
		return composite(kBool, func(r row) bool {
			if p(r) {
				return x(r)
			}
			return y(r)
		}, cond, a, b)
	case kInt, kTime, kDur:
		x, y := a.i, b.i
		return composite(a.k, func(r row) int64 {
			if p(r) {
				return x(r)
			}
			return y(r)
		}, cond, a, b)
	case kFloat:
		x, y := a.f, b.f
		return composite(kFloat, func(r row) float64 {
			if p(r) {
				return x(r)
			}
			return y(r)
		}, cond, a, b)
	case kString:
		x, y := a.s, b.s
		return composite(kString, func(r row) string {
			if p(r) {
				return x(r)
			}
			return y(r)
		}, cond, a, b)
	}
	return nil
}

// builtin compiles the cheap builtins: len (of a string, in characters),
// abs, lower, upper, int, float, ceil, floor, round, duration("literal").
func (c *fastCompiler) builtin(n *ast.BuiltinNode) *node {
	if len(n.Arguments) != 1 {
		return nil
	}
	if n.Name == "duration" {
		s, ok := n.Arguments[0].(*ast.StringNode)
		if !ok {
			return nil
		}
		d, err := time.ParseDuration(s.Value)
		if err != nil {
			return nil
		}
		return constInt(kDur, int64(d))
	}
	x, ok := c.compile(n.Arguments[0], false)
	if !ok {
		return nil
	}
	switch n.Name {
	case "len":
		if x.k == kString {
			g := x.s
			return composite(kInt, func(r row) int64 { return int64(utf8.RuneCountInString(g(r))) }, x)
		}
	case "lower", "upper":
		if x.k == kString {
			g, f := x.s, strings.ToLower
			if n.Name == "upper" {
				f = strings.ToUpper
			}
			return composite(kString, func(r row) string { return f(g(r)) }, x)
		}
	case "abs":
		switch x.k {
		case kInt:
			g := x.i
			return composite(kInt, func(r row) int64 {
				if v := g(r); v < 0 {
					return -v
				} else {
					return v
				}
			}, x)
		case kFloat:
			g := x.f
			return composite(kFloat, func(r row) float64 {
				if v := g(r); v < 0 {
					return -v
				} else {
					return v
				}
			}, x)
		}
	case "float":
		if x.k.numeric() {
			return composite(kFloat, asFloat(x), x)
		}
	case "int":
		switch x.k {
		case kInt:
			return x
		case kFloat:
			g := x.f
			return composite(kInt, func(r row) int64 { return int64(g(r)) }, x)
		}
	case "ceil", "floor", "round":
		if !x.k.numeric() {
			return nil
		}
		g := asFloat(x)
		if x.k == kInt {
			return composite(kFloat, g, x)
		}
		f := math.Ceil
		switch n.Name {
		case "floor":
			f = math.Floor
		case "round":
			f = math.Round
		}
		return composite(kFloat, func(r row) float64 { return f(g(r)) }, x)
	}
	return nil
}
