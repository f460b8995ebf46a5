package source

import (
	"fmt"
	"strconv"
	"strings"
)

// A JSON path names where a field's value is found inside a JSON value.
// Its grammar:
//
//	path    = ["$"] first step*
//	first   = key | "[" index "]" | "[" quoted "]"     (after "$": a step)
//	step    = "." key | "[" index "]" | "[" quoted "]"
//	key     = one or more bytes other than . [ ] and "
//	index   = 0 | [1-9][0-9]*                           (0-based)
//	quoted  = a JSON string: "a.b", "x\"y"
//
// properties.mag is member mag of member properties; geometry.coordinates[1]
// the second element of that array; ["a.b"] the member named a.b (a key
// holding . [ ] or " is written quoted). A path starting with $ is rooted
// at the document rather than at the record: it differs only under
// explode, where a record is an element of the exploded array and $.x
// reaches member x of the document that holds the array. "$" alone is the
// document itself.

// pathStep is one step of a JSONPath: a member (key) or an array element
// (index ≥ 0).
type pathStep struct {
	key   string
	index int // -1 for a member
}

// JSONPath is a parsed path.
type JSONPath struct {
	Rooted bool // starts with $
	steps  []pathStep
}

// String is the path as written in messages: steps joined with '.' and
// [i], quoted keys quoted.
func (p JSONPath) String() string {
	var b strings.Builder
	if p.Rooted {
		b.WriteByte('$')
	}
	writeSteps(&b, p.steps, p.Rooted)
	return b.String()
}

func writeSteps(b *strings.Builder, steps []pathStep, dot bool) {
	for i, s := range steps {
		switch {
		case s.index >= 0:
			fmt.Fprintf(b, "[%d]", s.index)
		case strings.ContainsAny(s.key, ".[]\"") || s.key == "" || s.key == "$" && i == 0 && !dot:
			b.WriteByte('[')
			b.WriteString(strconv.Quote(s.key))
			b.WriteByte(']')
		default:
			if i > 0 || dot {
				b.WriteByte('.')
			}
			b.WriteString(s.key)
		}
	}
}

// ParseJSONPath parses s (grammar above). Its error says what was
// expected at which byte (1-based) of s.
func ParseJSONPath(s string) (JSONPath, error) {
	var p JSONPath
	i := 0
	if s == "" {
		return p, fmt.Errorf("empty path")
	}
	if s[0] == '$' && (len(s) == 1 || s[1] == '.' || s[1] == '[') {
		p.Rooted = true
		i = 1
	}
	first := !p.Rooted
	for i < len(s) {
		c := s[i]
		switch {
		case c == '[':
			j := strings.IndexByte(s[i:], ']')
			if i+1 < len(s) && s[i+1] == '"' {
				q, err := strconv.QuotedPrefix(s[i+1:])
				if err != nil {
					return p, fmt.Errorf("path %q: unterminated quoted key at byte %d", s, i+2)
				}
				key, _ := strconv.Unquote(q)
				e := i + 1 + len(q)
				if e >= len(s) || s[e] != ']' {
					return p, fmt.Errorf("path %q: expected ']' after the quoted key at byte %d", s, e+1)
				}
				p.steps = append(p.steps, pathStep{key: key, index: -1})
				i = e + 1
			} else {
				if j < 0 {
					return p, fmt.Errorf("path %q: '[' at byte %d is not closed", s, i+1)
				}
				num := s[i+1 : i+j]
				n, err := strconv.Atoi(num)
				if err != nil || n < 0 || num != strconv.Itoa(n) {
					return p, fmt.Errorf("path %q: [%s] at byte %d: expected an array index (0, 1, …) or a quoted key [\"…\"]", s, num, i+1)
				}
				p.steps = append(p.steps, pathStep{index: n})
				i += j + 1
			}
		case c == '.' || first:
			if c == '.' {
				if first {
					return p, fmt.Errorf("path %q: expected a key at byte 1, found '.'", s)
				}
				i++
			}
			e := i
			for e < len(s) && !strings.ContainsRune(".[]\"", rune(s[e])) {
				e++
			}
			if e == i {
				what := "the end"
				if e < len(s) {
					what = fmt.Sprintf("%q", s[e])
				}
				return p, fmt.Errorf("path %q: expected a key at byte %d, found %s (an empty key; quote keys that hold . [ ] or \" as [\"…\"])", s, i+1, what)
			}
			p.steps = append(p.steps, pathStep{key: s[i:e], index: -1})
			i = e
		default:
			return p, fmt.Errorf("path %q: expected '.' or '[' at byte %d, found %q", s, i+1, c)
		}
		first = false
	}
	return p, nil
}

// keyPath is the path of a field given without path: its name as one key,
// taken literally (a name with dots is one member, as before paths).
func keyPath(name string) JSONPath {
	return JSONPath{steps: []pathStep{{key: name, index: -1}}}
}

// pnode is a node of the tree of the fields' paths that the parser walks:
// the fields whose paths pass through a value are below its node.
type pnode struct {
	field   int               // ≥ 0: the field whose value this is; -1: none
	keys    map[string]*pnode // members wanted, when the value is an object
	elems   []*pnode          // elements wanted (nil: not), when an array
	explode bool              // the array exploded into records (document tree)
	fields  []int             // every field at or below this node
	at      string            // the path to this node, for messages
}

func newPnode(at string) *pnode { return &pnode{field: -1, at: at} }

// add adds field f at path steps below n.
func (n *pnode) add(steps []pathStep, f int, name string, rooted bool) error {
	n.fields = append(n.fields, f)
	if len(steps) == 0 {
		if n.field >= 0 || n.explode {
			return fmt.Errorf("two fields or explode at the same path")
		}
		if n.keys != nil || n.elems != nil {
			return fmt.Errorf("a value cannot be both a field and hold other fields")
		}
		n.field = f
		return nil
	}
	if n.field >= 0 {
		return fmt.Errorf("a value cannot be both a field and hold other fields")
	}
	if n.explode {
		return fmt.Errorf("the path goes into the exploded array: write it relative to the element, without $")
	}
	s := steps[0]
	var b strings.Builder
	b.WriteString(n.at)
	if rooted && n.at == "" {
		b.WriteByte('$')
	}
	writeSteps(&b, steps[:1], n.at != "" || rooted)
	var c *pnode
	if s.index >= 0 {
		if n.keys != nil {
			return fmt.Errorf("%s cannot be both an array and an object", orRoot(n.at))
		}
		if s.index >= 1<<16 {
			return fmt.Errorf("array index %d: at most 65535", s.index)
		}
		for len(n.elems) <= s.index {
			n.elems = append(n.elems, nil)
		}
		if n.elems[s.index] == nil {
			n.elems[s.index] = newPnode(b.String())
		}
		c = n.elems[s.index]
	} else {
		if n.elems != nil {
			return fmt.Errorf("%s cannot be both an array and an object", orRoot(n.at))
		}
		if n.keys == nil {
			n.keys = map[string]*pnode{}
		}
		if n.keys[s.key] == nil {
			n.keys[s.key] = newPnode(b.String())
		}
		c = n.keys[s.key]
	}
	return c.add(steps[1:], f, name, rooted)
}

func orRoot(at string) string {
	if at == "" {
		return "the record"
	}
	return at
}
