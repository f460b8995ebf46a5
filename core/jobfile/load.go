package jobfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
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
	ast  *ast.File
	text string
}

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
	text := Interpolate(string(data))
	f := &File{Path: path, Dir: filepath.Dir(path), text: text}
	if strings.TrimSpace(text) == "" {
		return nil, &Error{File: path, Msg: "empty job file (expected at least source: and sink:)"}
	}
	var err error
	if f.ast, err = parser.ParseBytes([]byte(text), 0); err != nil {
		return nil, f.yamlError(err)
	}
	if err := yaml.UnmarshalWithOptions([]byte(text), &f.Spec, yaml.DisallowUnknownField(), yaml.UseOrderedMap()); err != nil {
		return nil, f.yamlError(err)
	}
	return f, nil
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
	return e
}

// errAt returns an Error at the node the path ("source.parquet.path",
// "region.ops[0].window.size") names, or at its nearest existing parent.
func (f *File) errAt(path string, format string, args ...any) error {
	e := &Error{File: f.Path, Path: path, Msg: fmt.Sprintf(format, args...)}
	e.Line, e.Column = f.pos(path)
	return e
}

func (f *File) pos(path string) (int, int) {
	for p := path; p != ""; p = parent(p) {
		yp, err := yaml.PathString("$." + p)
		if err != nil {
			continue
		}
		n, err := yp.FilterFile(f.ast)
		if err != nil || n == nil {
			continue
		}
		if tk := n.GetToken(); tk != nil && tk.Position != nil {
			return tk.Position.Line, tk.Position.Column
		}
	}
	return 0, 0
}

func parent(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}

// path resolves a path from the job file relative to its directory.
func (f *File) path(p string) string {
	if p == "" || p == "-" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(f.Dir, p)
}
