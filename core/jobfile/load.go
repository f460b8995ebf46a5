package jobfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// Error is a job file error at a position: "file:line:col: what: message".
type Error struct {
	File         string
	Line, Column int // 1-based; 0 if unknown
	Path         string
	Msg          string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Column)
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// File is a loaded job file: its decoded Spec and what is needed to point
// at positions in it.
type File struct {
	Path string
	Dir  string
	Spec Spec
	// orderWeak, once Build has built the region, is a region operator
	// that breaks a window's firing order (checkRegionOrder); nil: none.
	orderWeak *WeakUse
	ast       *ast.File
	text      string // interpolated: positions in ast are positions in text
	// shifts lists, per line, where interpolation changed the length of
	// the line, to map columns in text back to columns in the file.
	shifts map[int][]shift
	// files are the files a job being built reads or appends to (its
	// input, lookup tables, dead-letter file), which its sink must not
	// replace (see claimFile, checkNotClaimed).
	files []claimed
	// root is the type the document decodes into, whose keys an unknown
	// key's error lists (keysAt); nil: Spec, a whole job file.
	root reflect.Type
}

// shift is one replaced ${…} on a line: it starts at column col of the
// interpolated line, is n characters long there and raw in the file.
type shift struct{ col, n, raw int }

func (f *File) lines() []string { return strings.Split(f.text, "\n") }

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// Interpolate replaces ${VAR} with the variable's value and ${VAR:-default}
// with its value or, when unset or empty, the default.
func Interpolate(s string) string {
	return envRef.ReplaceAllStringFunc(s, func(m string) string {
		sub := envRef.FindStringSubmatch(m)
		if v := os.Getenv(sub[1]); v != "" || sub[2] == "" {
			return v
		}
		return sub[3]
	})
}

// interpolate is Interpolate, recording shifts. A value with a line break
// in it moves the lines after it; their columns are then not mapped back.
func (f *File) interpolate(raw string) string {
	var b strings.Builder
	for i, line := range strings.SplitAfter(raw, "\n") {
		last, col := 0, 1
		for _, m := range envRef.FindAllStringIndex(line, -1) {
			b.WriteString(line[last:m[0]])
			col += utf8.RuneCountInString(line[last:m[0]])
			v := Interpolate(line[m[0]:m[1]])
			b.WriteString(v)
			sh := shift{col: col, n: utf8.RuneCountInString(v), raw: utf8.RuneCountInString(line[m[0]:m[1]])}
			if f.shifts == nil {
				f.shifts = map[int][]shift{}
			}
			f.shifts[i+1] = append(f.shifts[i+1], sh)
			col += sh.n
			last = m[1]
		}
		b.WriteString(line[last:])
	}
	return b.String()
}

// rawPos maps a column of the interpolated text to the file's; a column
// inside a replaced value maps to the "${" it came from.
func (f *File) rawPos(line, col int) (int, int) {
	delta := 0
	for _, s := range f.shifts[line] {
		if col < s.col {
			break
		}
		if col < s.col+s.n {
			return line, s.col + delta
		}
		delta += s.raw - s.n
	}
	return line, col + delta
}

// Load reads and strictly decodes a job file.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read job file: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes job file text; path names it in errors and anchors relative
// paths.
func Parse(path string, data []byte) (*File, error) {
	f := &File{Path: path, Dir: filepath.Dir(path)}
	text := f.interpolate(string(data))
	f.text = text
	if strings.TrimSpace(text) == "" {
		return nil, &Error{File: path, Msg: "empty job file (expected at least source: and sink:)"}
	}
	var err error
	if f.ast, err = parser.ParseBytes([]byte(text), 0); err != nil {
		return nil, f.yamlError(err)
	}
	if len(f.ast.Docs) == 0 || f.ast.Docs[0].Body == nil || f.ast.Docs[0].Body.Type() == ast.CommentType {
		return nil, &Error{File: path, Msg: "empty job file (expected at least source: and sink:)"}
	}
	for _, d := range f.ast.Docs {
		if err := f.checkTags(d.Body, ""); err != nil {
			return nil, err
		}
	}
	if err := f.checkIntegers(); err != nil {
		return nil, err
	}
	if err := f.decode(); err != nil {
		return nil, err
	}
	return f, nil
}

// decode decodes f.text into f.Spec. The YAML decoder panics on some
// input (a tag where a list is expected; checkTags refuses those first,
// with their position): any other panic is reported as an error of the
// file, not a crash.
func (f *File) decode() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &Error{File: f.Path, Msg: fmt.Sprintf("cannot decode the file (YAML decoder: %v)", r)}
		}
	}()
	if err := yaml.UnmarshalWithOptions([]byte(f.text), &f.Spec, yaml.DisallowUnknownField(), yaml.UseOrderedMap()); err != nil {
		return f.yamlError(err)
	}
	return nil
}

var goTypeWords = regexp.MustCompile(`Go struct field ([\w.]+) of type ([\w.\[\]*]+)`)

func (f *File) yamlError(err error) error {
	var ye yaml.Error
	if !errors.As(err, &ye) {
		return &Error{File: f.Path, Msg: err.Error()}
	}
	e := &Error{File: f.Path, Msg: ye.GetMessage()}
	if tk := ye.GetToken(); tk != nil && tk.Position != nil {
		e.Line, e.Column = tk.Position.Line, tk.Position.Column
	}
	// "cannot unmarshal string into Go struct field RegionSpec.Channels of
	// type int" → "cannot unmarshal string: expected int".
	e.Msg = goTypeWords.ReplaceAllStringFunc(e.Msg, func(m string) string {
		sub := goTypeWords.FindStringSubmatch(m)
		return "a value of type " + strings.TrimPrefix(strings.TrimPrefix(sub[2], "*"), "jobfile.")
	})
	e.Msg = strings.Replace(e.Msg, "into a value of type", "where expected a value of type", 1)
	if strings.HasPrefix(e.Msg, "cannot unmarshal ") {
		// A value of the wrong type ("congestion_threshold: [1]"): name
		// its key and, for a scalar type, what was expected.
		if path, n := f.valueAt(e.Line, e.Column); n != nil {
			e.Path = path
			if sub := expectedType.FindStringSubmatch(e.Msg); sub != nil && typeWords[sub[1]] != "" {
				e.Msg = "expected " + typeWords[sub[1]] + ", not " + describe(n)
			}
		}
	}
	if strings.HasPrefix(e.Msg, "unknown field ") {
		if keys := f.keysAt(e.Line, e.Column); keys != nil {
			e.Msg += " (expected one of " + strings.Join(keys, ", ") + ")"
		}
	}
	e.Line, e.Column = f.rawPos(e.Line, e.Column)
	return e
}

var expectedType = regexp.MustCompile(`^cannot unmarshal .* where expected a value of type (\w+)$`)

// typeWords names the scalar Go types of Spec fields in the job file's
// terms (integers are checked before decoding: checkIntegers).
var typeWords = map[string]string{
	"float64": "a number",
	"bool":    "true or false",
	"string":  "a single value", // names, expressions, durations
}

// valueAt returns the path ("region.elastic.sensitivity") and the node of
// the value that starts at line:col of the interpolated text, the
// outermost one if several do; "" and nil if no key's or list entry's
// value starts there.
func (f *File) valueAt(line, col int) (string, ast.Node) {
	if f.ast == nil || len(f.ast.Docs) == 0 {
		return "", nil
	}
	var walk func(n ast.Node, path string) (string, ast.Node)
	at := func(n ast.Node, path string) (string, ast.Node) {
		if n = unwrap(n); n == nil {
			return "", nil
		}
		if l, c := position(n.GetToken()); l == line && c == col {
			return path, n
		}
		return walk(n, path)
	}
	walk = func(n ast.Node, path string) (string, ast.Node) {
		if sq, ok := n.(*ast.SequenceNode); ok {
			for i, v := range sq.Values {
				if p, vn := at(v, fmt.Sprintf("%s[%d]", path, i)); vn != nil {
					return p, vn
				}
			}
			return "", nil
		}
		for _, mv := range mappingPairs(n) {
			tk := mv.Key.GetToken()
			if tk == nil {
				continue
			}
			p := tk.Value
			if path != "" {
				p = path + "." + tk.Value
			}
			if p, vn := at(mv.Value, p); vn != nil {
				return p, vn
			}
		}
		return "", nil
	}
	return walk(unwrap(f.ast.Docs[0].Body), "")
}

// describe says what a value is, for "expected …, not …": a scalar as
// written (a string quoted), "a list", "a mapping".
func describe(n ast.Node) string {
	switch v := n.(type) {
	case *ast.StringNode:
		if isQuoted(v) {
			return fmt.Sprintf("the string %q", v.Value)
		}
		return strconv.Quote(v.Value)
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.LiteralNode:
		return "a block scalar"
	}
	if tk := n.GetToken(); tk != nil {
		return tk.Value
	}
	return "a " + n.Type().String()
}

// errAt returns an Error at the node the path ("source.parquet.path",
// "region.ops[0].window.size") names, or at its nearest existing parent.
func (f *File) errAt(path string, format string, args ...any) error {
	e := &Error{File: f.Path, Path: path, Msg: fmt.Sprintf(format, args...)}
	e.Line, e.Column = f.rawPos(f.pos(path))
	return e
}

// where is "file:line:column" of key, for an error that is not itself at a
// position of the file (one about a command-line flag); the file alone if
// the key is not in the file.
func (f *File) where(key string) string {
	l, c := f.rawPos(f.pos(key))
	if l == 0 || !f.present(key) {
		return f.Path
	}
	return fmt.Sprintf("%s:%d:%d", f.Path, l, c)
}

// pos returns the position of what path names: a scalar's value; the key
// of a mapping, a sequence or an empty value; the first key of a sequence
// element. A path that goes where the file has nothing stops at the
// nearest existing parent; the empty path is the document's first key.
func (f *File) pos(path string) (int, int) {
	if f.ast == nil || len(f.ast.Docs) == 0 || f.ast.Docs[0].Body == nil {
		return 0, 0
	}
	n := f.ast.Docs[0].Body
	at := startToken(n)
	for _, seg := range segments(path) {
		n = unwrap(n)
		if seg.index >= 0 {
			sq, ok := n.(*ast.SequenceNode)
			if !ok || seg.index >= len(sq.Values) {
				return position(at)
			}
			n = sq.Values[seg.index]
			at = startToken(unwrap(n))
			continue
		}
		mv := lookupKey(n, seg.name)
		if mv == nil {
			return position(at)
		}
		n, at = mv.Value, mv.Key.GetToken()
	}
	if n = unwrap(n); n != nil && n.Type() != ast.NullType {
		if _, ok := n.(ast.ScalarNode); ok {
			at = n.GetToken()
		}
	}
	return position(at)
}

// present reports whether the file has the key path names (with any
// value, null included).
func (f *File) present(path string) bool {
	if f.ast == nil || len(f.ast.Docs) == 0 {
		return false
	}
	n := f.ast.Docs[0].Body
	for _, seg := range segments(path) {
		if seg.index >= 0 { // a list entry: source.union[1].stdin
			sq, ok := unwrap(n).(*ast.SequenceNode)
			if !ok || seg.index >= len(sq.Values) {
				return false
			}
			n = sq.Values[seg.index]
			continue
		}
		mv := lookupKey(unwrap(n), seg.name)
		if mv == nil {
			return false
		}
		n = mv.Value
	}
	return true
}

type segment struct {
	name  string
	index int // ≥ 0 for [index]
}

// segments splits "region.ops[0].window" into region, ops, [0], window.
func segments(path string) []segment {
	var segs []segment
	for _, part := range strings.Split(path, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name != "" {
			segs = append(segs, segment{name: name, index: -1})
		}
		for rest != "" {
			num, after, _ := strings.Cut(rest, "]")
			i, err := strconv.Atoi(num)
			if err != nil {
				break
			}
			segs = append(segs, segment{index: i})
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return segs
}

func unwrap(n ast.Node) ast.Node {
	for {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		default:
			return n
		}
	}
}

func lookupKey(n ast.Node, name string) *ast.MappingValueNode {
	var pairs []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.MappingNode:
		pairs = m.Values
	case *ast.MappingValueNode:
		pairs = []*ast.MappingValueNode{m}
	}
	for _, mv := range pairs {
		if tk := mv.Key.GetToken(); tk != nil && tk.Value == name {
			return mv
		}
	}
	return nil
}

// startToken is where a node begins: a mapping's first key, else its own
// token.
func startToken(n ast.Node) *token.Token {
	switch m := n.(type) {
	case *ast.MappingNode:
		if len(m.Values) > 0 {
			return m.Values[0].Key.GetToken()
		}
	case *ast.MappingValueNode:
		return m.Key.GetToken()
	}
	if n == nil {
		return nil
	}
	return n.GetToken()
}

func position(tk *token.Token) (int, int) {
	if tk == nil || tk.Position == nil {
		return 0, 0
	}
	return tk.Position.Line, tk.Position.Column
}

// keysAt lists the keys allowed beside the key at line:col (an unknown
// field), from the yaml tags of the Spec type that decodes that mapping.
func (f *File) keysAt(line, col int) []string {
	if f.ast == nil || len(f.ast.Docs) == 0 {
		return nil
	}
	var walk func(n ast.Node, t reflect.Type) []string
	walk = func(n ast.Node, t reflect.Type) []string {
		t = yamlType(t)
		n = unwrap(n)
		switch t.Kind() {
		case reflect.Struct:
			for _, mv := range mappingPairs(n) {
				tk := mv.Key.GetToken()
				if l, c := position(tk); l == line && c == col {
					return yamlKeys(t)
				}
				if sf, ok := fieldByKey(t, tk.Value); ok {
					if keys := walk(mv.Value, sf.Type); keys != nil {
						return keys
					}
				}
			}
		case reflect.Slice:
			if sq, ok := n.(*ast.SequenceNode); ok {
				for _, v := range sq.Values {
					if keys := walk(v, t.Elem()); keys != nil {
						return keys
					}
				}
			}
		}
		return nil
	}
	root := f.root
	if root == nil {
		root = reflect.TypeFor[Spec]()
	}
	return walk(f.ast.Docs[0].Body, root)
}

// mappingPairs returns the key: value pairs of a mapping node (a block or
// flow mapping, or a single pair); nil for any other node.
func mappingPairs(n ast.Node) []*ast.MappingValueNode {
	switch m := n.(type) {
	case *ast.MappingNode:
		return m.Values
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{m}
	}
	return nil
}

func yamlKeys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		if k, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if k, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); k == key {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

// path resolves a path from the job file relative to its directory.
func (f *File) path(p string) string {
	if p == "" || p == "-" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(f.Dir, p)
}
