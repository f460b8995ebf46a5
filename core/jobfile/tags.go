package jobfile

import (
	"fmt"

	"github.com/goccy/go-yaml/ast"
)

// checkTags refuses any YAML tag (`!x`, `!!str`) in the file, at its line
// and column, before the file is decoded. Job files take plain scalars,
// lists and maps, so a tag is a mistake; and the YAML decoder panics on
// some where a list or map is expected (`pipeline: !x`, a nil node under
// the tag), so they must not reach it. path is the key path of n.
func (f *File) checkTags(n ast.Node, path string) error {
	switch v := n.(type) {
	case nil:
		return nil
	case *ast.TagNode:
		e := &Error{File: f.Path, Path: path, Msg: fmt.Sprintf("YAML tag %s is not supported (expected a plain value, list or map)", v.Start.Value)}
		if p := v.Start.Position; p != nil {
			e.Line, e.Column = f.rawPos(p.Line, p.Column)
		}
		return e
	case *ast.AnchorNode:
		return f.checkTags(v.Value, path)
	case *ast.MappingNode:
		for _, mv := range v.Values {
			if err := f.checkTags(mv, path); err != nil {
				return err
			}
		}
	case *ast.MappingValueNode:
		if err := f.checkTags(v.Key, path); err != nil {
			return err
		}
		p := path
		if tk := v.Key.GetToken(); tk != nil {
			if p != "" {
				p += "."
			}
			p += tk.Value
		}
		return f.checkTags(v.Value, p)
	case *ast.SequenceNode:
		for i, x := range v.Values {
			if err := f.checkTags(x, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}
