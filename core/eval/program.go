package eval

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/vm"

	"streamd/core"
)

// Expressions treat core.Int64 fields as Go int (see the package doc); this
// fails to compile where int is narrower than 64 bits.
const _ uint = strconv.IntSize - 64

// Program is an expression compiled against one schema. It is immutable
// after Compile and safe for concurrent use by many goroutines (the
// operator instances of all channels share one Program).
type Program struct {
	src    string
	schema *core.Schema
	typ    core.Type

	// fast is the closure tree of the fast path; nil when the expression
	// uses something outside the fast subset and runs on expr-lang's vm.
	fast *node
	// mayFail says that the fast path can raise a run-time error (an
	// integer modulo by zero); only then does evaluation pay for a recover.
	mayFail bool

	vmProg *vm.Program
	refs   []ref // fields the expression reads, boxed into the vm's env
	// nullRefs are the Nullable fields the expression reads (indexes in
	// the record); nil when it reads none, and then nothing checks for
	// null. A record with a null in one of them is evaluated on the vm.
	nullRefs []int
	// returnsNil: the expression may give the nil literal itself (a ?:
	// branch), a null result whatever the record (Nullable).
	returnsNil bool
	states     sync.Pool // *vmState: a reused env map and vm per goroutine
}

type ref struct {
	name     string
	idx      int
	typ      core.Type
	nullable bool
}

type vmState struct {
	env map[string]any
	m   vm.VM
}

// Compile parses and type-checks src once, against schema s, and builds its
// evaluator. Each field of s is a variable of the same name, typed:
//
//	int64     → int (64-bit; integer literals and integer arithmetic are int)
//	float64   → float64
//	string    → string
//	bool      → bool
//	timestamp → time.Time (UTC); ts1 - ts2 is a time.Duration
//
// The result type (Program.Type) must be one of core's types: integers and
// durations give Int64 (durations in ns), floats Float64, time.Time gives
// Timestamp. A ternary whose branches are int and float gives Float64.
//
// Errors are *Error with the line and column within src: syntax errors,
// type errors, unknown fields (`unknown field "dealy" (fields: …)`) and
// result types that are not one of core's.
func Compile(src string, s *core.Schema) (*Program, error) {
	env := make(map[string]any, s.Width())
	for _, f := range s.Fields {
		env[f.Name] = zeroOf(f.Type)
	}
	tree, err := checker.ParseCheck(src, conf.New(env))
	if err != nil {
		return nil, checkError(src, err, s)
	}
	typ, at, err := resultType(tree.Node)
	if err != nil {
		return nil, newError(src, at.Location().From, err.Error(), nil)
	}
	prog, err := expr.Compile(src, expr.Env(env))
	if err != nil {
		return nil, fromExpr(src, err)
	}
	p := &Program{src: src, schema: s, typ: typ, vmProg: prog}
	p.refs = fieldRefs(tree.Node, s)
	p.returnsNil = mayReturnNil(tree.Node)
	for _, r := range p.refs {
		if r.nullable {
			p.nullRefs = append(p.nullRefs, r.idx)
		}
	}
	p.states.New = func() any { return &vmState{env: make(map[string]any, len(p.refs))} }

	c := fastCompiler{schema: s}
	if n, ok := c.compile(tree.Node, true); ok && n.k.coreType() == typ {
		p.fast, p.mayFail = n, c.mayFail
	}
	return p, nil
}

// Type is the type of the expression's result.
func (p *Program) Type() core.Type { return p.typ }

// Nullable says the result may be core.Null: the expression reads a
// Nullable field, or may itself give nil (`x > 3 ? nil : x`).
func (p *Program) Nullable() bool { return p.nullRefs != nil || p.returnsNil }

// mayReturnNil says whether n's result may be the nil literal: n is nil,
// a ?: with a branch that may be, or a ?? whose right side may be.
func mayReturnNil(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.NilNode:
		return true
	case *ast.ConditionalNode:
		return mayReturnNil(n.Exp1) || mayReturnNil(n.Exp2)
	case *ast.BinaryNode:
		return n.Operator == "??" && mayReturnNil(n.Right)
	}
	return false
}

// hasNull says whether row holds a null in a field the expression reads.
func (p *Program) hasNull(row []core.Value) bool {
	for _, i := range p.nullRefs {
		if row[i].IsNull() {
			return true
		}
	}
	return false
}

// Source is the expression's text.
func (p *Program) Source() string { return p.src }

// Schema is the schema the expression was compiled against.
func (p *Program) Schema() *core.Schema { return p.schema }

// Fast reports whether the expression runs on the allocation-free closure
// path (true) or falls back to expr-lang's vm (false).
func (p *Program) Fast() bool { return p.fast != nil }

// ErrType is the cause of an error returned by EvalBool, EvalInt or
// EvalFloat on a Program whose result type does not fit.
var ErrType = errors.New("wrong result type")

// Eval evaluates the expression over row (a record of the Program's schema;
// it is only read) and returns a value of type p.Type(). On the fast path
// it does not allocate. Run-time errors (an integer modulo by zero, errors
// the vm reports) are *Error; nothing panics.
//
// Nulls: a null field is nil to the expression, which may test it (x ==
// nil, x != nil && x > 3) or replace it (x ?? 0). An operation that fails
// on a nil operand (x + 1, x > 3) makes the result null, as SQL's
// operators do: so any failure while a field the expression reads is null
// gives core.Null, not an error. A record with a null is evaluated on the
// vm (it allocates); records without one keep the fast path.
func (p *Program) Eval(row []core.Value) (core.Value, error) {
	if p.nullRefs != nil && p.hasNull(row) {
		return p.evalVM(row)
	}
	if n := p.fast; n != nil {
		if p.mayFail {
			return p.evalFastSafe(row)
		}
		return n.value(row), nil
	}
	return p.evalVM(row)
}

// EvalBool evaluates a Bool expression (a filter condition). A null result
// is false: null is not true.
func (p *Program) EvalBool(row []core.Value) (bool, error) {
	if p.nullRefs != nil && p.hasNull(row) {
		if p.typ != core.Bool {
			return false, p.typeError(core.Bool)
		}
		v, err := p.evalVM(row)
		return !v.IsNull() && v.Bool(), err
	}
	if n := p.fast; n != nil && n.k == kBool && !p.mayFail {
		return n.b(row), nil
	}
	if p.typ != core.Bool {
		return false, p.typeError(core.Bool)
	}
	v, err := p.Eval(row)
	return v.Bool(), err
}

// EvalInt evaluates an Int64 or Timestamp expression (ns for timestamps).
// A null result is an error (ErrNull).
func (p *Program) EvalInt(row []core.Value) (int64, error) {
	if p.nullRefs != nil && p.hasNull(row) {
		return 0, p.nullError()
	}
	if n := p.fast; n != nil && n.i != nil && !p.mayFail {
		return n.i(row), nil
	}
	if p.typ != core.Int64 && p.typ != core.Timestamp {
		return 0, p.typeError(core.Int64)
	}
	v, err := p.Eval(row)
	return v.Int(), err
}

// EvalFloat evaluates a Float64 or Int64 expression (converted to float64).
// A null result is an error (ErrNull).
func (p *Program) EvalFloat(row []core.Value) (float64, error) {
	if p.nullRefs != nil && p.hasNull(row) {
		return 0, p.nullError()
	}
	if n := p.fast; n != nil && n.k == kFloat && !p.mayFail {
		return n.f(row), nil
	}
	v, err := p.Eval(row)
	switch p.typ {
	case core.Float64:
		return v.Float(), err
	case core.Int64:
		return float64(v.Int()), err
	}
	return 0, p.typeError(core.Float64)
}

// ErrNull is the cause of an error returned by EvalInt or EvalFloat over a
// record whose result is null.
var ErrNull = errors.New("null result")

// nullError is EvalInt's and EvalFloat's error for a null result (or a
// record with a null, which they do not evaluate: their callers need a
// number).
func (p *Program) nullError() error {
	return &Error{Line: 1, Column: 1, Src: p.src, err: ErrNull, Msg: fmt.Sprintf("expression %q reads a null field", p.src)}
}

func (p *Program) typeError(want core.Type) error {
	return &Error{Line: 1, Column: 1, Src: p.src, err: ErrType,
		Msg: fmt.Sprintf("expression %q is %s, not %s", p.src, p.typ, want)}
}

// runtimeError is what a fast-path closure panics with; evalFastSafe turns
// it back into an error. Closures stay single-result and branch-free for
// the common case; only programs with a fallible node pay for the recover.
type runtimeError struct {
	from int // rune index in the source
	err  error
}

func (p *Program) evalFastSafe(row []core.Value) (v core.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			re, ok := r.(runtimeError)
			if !ok {
				panic(r)
			}
			err = newError(p.src, re.from, re.err.Error(), re.err)
		}
	}()
	return p.fast.value(row), nil
}

// evalVM runs the expression on expr-lang's vm with a reused env map (and
// vm) from a pool. It allocates: fields are boxed into the env.
func (p *Program) evalVM(row []core.Value) (core.Value, error) {
	st := p.states.Get().(*vmState)
	null := false
	for _, r := range p.refs {
		if v := row[r.idx]; r.nullable && v.IsNull() {
			st.env[r.name], null = nil, true
		} else {
			st.env[r.name] = box(r.typ, v)
		}
	}
	out, err := st.m.Run(p.vmProg, st.env)
	p.states.Put(st)
	if err != nil {
		if null {
			return core.Null(), nil // an operation on a null: null (see Eval)
		}
		return core.Value{}, fromExpr(p.src, err)
	}
	if out == nil && (null || p.returnsNil) {
		return core.Null(), nil
	}
	v, ok := toValue(p.typ, out)
	if !ok {
		return core.Value{}, newError(p.src, 0, fmt.Sprintf("expression returned %T, expected %s", out, p.typ), nil)
	}
	return v, nil
}

func zeroOf(t core.Type) any {
	switch t {
	case core.Int64:
		return int(0)
	case core.Float64:
		return float64(0)
	case core.String:
		return ""
	case core.Bool:
		return false
	case core.Timestamp:
		return time.Time{}
	}
	return nil
}

func box(t core.Type, v core.Value) any {
	switch t {
	case core.Int64:
		return int(v.Int())
	case core.Float64:
		return v.Float()
	case core.String:
		return v.Str()
	case core.Bool:
		return v.Bool()
	case core.Timestamp:
		return time.Unix(0, v.Time()).UTC()
	}
	return nil
}

// toValue converts a vm result to a value of type t.
func toValue(t core.Type, out any) (core.Value, bool) {
	switch t {
	case core.Int64:
		if i, ok := asInt(out); ok {
			return core.IntValue(i), true
		}
	case core.Float64:
		switch x := out.(type) {
		case float64:
			return core.FloatValue(x), true
		case float32:
			return core.FloatValue(float64(x)), true
		}
		if i, ok := asInt(out); ok {
			return core.FloatValue(float64(i)), true
		}
	case core.String:
		if s, ok := out.(string); ok {
			return core.StringValue(s), true
		}
	case core.Bool:
		if b, ok := out.(bool); ok {
			return core.BoolValue(b), true
		}
	case core.Timestamp:
		if ts, ok := out.(time.Time); ok {
			return core.TimeValue(ts.UnixNano()), true
		}
	}
	return core.Value{}, false
}

func asInt(out any) (int64, bool) {
	switch x := out.(type) {
	case int:
		return int64(x), true
	case int64:
		return x, true
	case time.Duration:
		return int64(x), true
	case int32:
		return int64(x), true
	case int16:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint:
		return int64(x), true
	case uint64:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint8:
		return int64(x), true
	}
	return 0, false
}

var timeType = reflect.TypeOf(time.Time{})

// resultType maps the checked root's nature to a core type. A ternary whose
// nature is unknown because its branches are int and float is Float64. On
// error, at is the node to blame.
func resultType(n ast.Node) (t core.Type, at ast.Node, err error) {
	nt := n.Nature()
	if nt.Type == nil {
		if c, ok := n.(*ast.ConditionalNode); ok {
			a, at, err := resultType(c.Exp1)
			if err != nil {
				return core.Invalid, at, err
			}
			b, at, err := resultType(c.Exp2)
			if err != nil {
				return core.Invalid, at, err
			}
			switch {
			case a == b:
				return a, nil, nil
			case (a == core.Int64 || a == core.Float64) && (b == core.Int64 || b == core.Float64):
				return core.Float64, nil, nil
			}
			return core.Invalid, c.Exp2, fmt.Errorf("the branches of ?: are %s and %s; give both the same type", a, b)
		}
		return core.Invalid, n, errors.New("cannot tell the type of the expression's result; it must be int64, float64, string, bool or timestamp")
	}
	if t, ok := typeOf(nt.Type); ok {
		return t, nil, nil
	}
	return core.Invalid, n, fmt.Errorf("the expression's result is %s; it must be int64, float64, string, bool or timestamp", nt.Type)
}

func typeOf(t reflect.Type) (core.Type, bool) {
	if t == timeType {
		return core.Timestamp, true
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return core.Int64, true
	case reflect.Float32, reflect.Float64:
		return core.Float64, true
	case reflect.String:
		return core.String, true
	case reflect.Bool:
		return core.Bool, true
	}
	return core.Invalid, false
}

// fieldRefs lists the schema fields the expression names, in schema order;
// all of them when it uses $env.
func fieldRefs(root ast.Node, s *core.Schema) []ref {
	used := make([]bool, s.Width())
	all := false
	ast.Find(root, func(n ast.Node) bool {
		if id, ok := n.(*ast.IdentifierNode); ok {
			if id.Value == "$env" {
				all = true
			} else if i := s.Index(id.Value); i >= 0 {
				used[i] = true
			}
		}
		return false
	})
	var refs []ref
	for i, f := range s.Fields {
		if all || used[i] {
			refs = append(refs, ref{name: f.Name, idx: i, typ: f.Type, nullable: f.Nullable})
		}
	}
	return refs
}

// checkError converts a parse or type error, rewording expr-lang's
// "unknown name x" into an unknown field or function with the fields there are.
func checkError(src string, err error, s *core.Schema) error {
	e := fromExpr(src, err)
	name, ok := strings.CutPrefix(e.Msg, "unknown name ")
	if !ok {
		return e
	}
	rest := strings.TrimLeftFunc(src[min(e.Offset+len(name), len(src)):], unicode.IsSpace)
	if strings.HasPrefix(rest, "(") {
		e.Msg = fmt.Sprintf("unknown function %q", name)
		return e
	}
	e.Msg = fmt.Sprintf("unknown field %q (fields: %s)", name, s.Names())
	if near := nearest(name, s); near != "" {
		e.Msg += fmt.Sprintf("; did you mean %q?", near)
	}
	return e
}

// nearest returns the field name closest to name in edit distance, if it is
// close enough to be a likely typo.
func nearest(name string, s *core.Schema) string {
	best, bestD := "", utf8.RuneCountInString(name)/3+1
	for _, f := range s.Fields {
		if d := editDistance(name, f.Name); d <= bestD && (best == "" || d < editDistance(name, best)) {
			best, bestD = f.Name, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	prev := make([]int, len(y)+1)
	cur := make([]int, len(y)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(x); i++ {
		cur[0] = i
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(y)]
}
