package jobfile

import (
	"fmt"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"

	"streamd/core"
	"streamd/core/timeparse"
)

// A column entry of a source's columns: or fields: (and of lookup_http's
// fields:) is either the short form, a type name:
//
//	ts: timestamp
//
// or a mapping whose type: is required and whose other keys say how the
// source reads the field:
//
//	day:   {type: timestamp, format: "%b %d %Y", time_zone: Europe/Paris}
//	mag:   {type: float64, path: properties.mag, nullable: true}
//	qty:   {type: int64, default: 0}
//
// The keys of the long form are the columnKeys below. Each kind that reads
// columns says which of them it takes (columns' allowed); any other key is
// an error at its position, naming the keys it does take.

// Column is one decoded column entry.
type Column struct {
	core.Field
	// At is the entry's path in the file (source.csv.columns.ts), for
	// errAt.
	At string
	// Set holds the long-form keys the entry gives, besides type.
	Set map[string]bool
	// Format is format: (timestamps: a Go layout or strftime).
	Format string
	// TimeZone is time_zone: (timestamps without an offset).
	TimeZone string
	// Unit is unit: (timestamps written as a number since the epoch: s,
	// ms, us, ns).
	Unit string
	// Path is path: (JSON: where the field is found in the value, e.g.
	// properties.mag or geometry.coordinates[1]).
	Path string
	// Nullable is nullable: (a missing or empty value is null).
	Nullable bool
	// Default is default: (the value of a missing or empty field), as
	// written in the file; nil when absent.
	Default any
}

// columnKeys are the keys of a column's long form besides type, in the
// order messages list them.
var columnKeys = []string{"format", "time_zone", "unit", "path", "nullable", "default"}

// columns decodes the column entries of ms (a columns: or fields: mapping
// at path). allowed lists the long-form keys the caller takes; an entry
// that gives another is refused at that key.
func (f *File) columns(path string, ms yaml.MapSlice, allowed ...string) ([]Column, error) {
	var cs []Column
	for _, it := range ms {
		name := fmt.Sprint(it.Key)
		c := Column{At: path + "." + name}
		var tname string
		switch v := it.Value.(type) {
		case string:
			tname = v
		case nil:
			return nil, f.errAt(c.At, "column %q has no type (expected a type name or {type: …})", name)
		default:
			m, ok := mapping(v)
			if !ok {
				return nil, f.errAt(c.At, "column %q: expected a type name or a mapping {type: …, …}, not %T", name, v)
			}
			c.Set = map[string]bool{}
			for _, kv := range m {
				k := fmt.Sprint(kv.Key)
				at := c.At + "." + k
				if k == "type" {
					s, ok := kv.Value.(string)
					if !ok {
						return nil, f.errAt(at, "type must be a type name")
					}
					tname = s
					continue
				}
				if !slices.Contains(allowed, k) {
					if slices.Contains(columnKeys, k) {
						return nil, f.errAt(at, "%s does not apply here (this source's columns take: type%s)", k, listKeys(allowed))
					}
					return nil, f.errAt(at, "unknown key %q (expected type%s)", k, listKeys(allowed))
				}
				if c.Set[k] {
					return nil, f.errAt(at, "%s is given twice", k)
				}
				c.Set[k] = true
				var err error
				switch k {
				case "format":
					c.Format, err = f.columnString(at, kv.Value)
				case "time_zone":
					c.TimeZone, err = f.columnString(at, kv.Value)
				case "unit":
					c.Unit, err = f.columnString(at, kv.Value)
				case "path":
					c.Path, err = f.columnString(at, kv.Value)
				case "nullable":
					b, ok := kv.Value.(bool)
					if !ok {
						err = f.errAt(at, "nullable must be true or false")
					}
					c.Nullable = b
				case "default":
					c.Default = kv.Value
				}
				if err != nil {
					return nil, err
				}
			}
			if tname == "" {
				return nil, f.errAt(c.At, "column %q has no type: (expected {type: …, …})", name)
			}
		}
		t, err := core.ParseType(tname)
		if err != nil {
			return nil, f.errAt(c.At, "%v", err)
		}
		c.Field = core.Field{Name: name, Type: t}
		if err := f.missingValue(&c); err != nil {
			return nil, err
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// nullKeys are the long-form keys that say what a missing value is; a
// source that reads missing values (CSV empty fields, JSON null or absent
// members) passes them to columns.
var nullKeys = []string{"nullable", "default"}

// missingValue checks c's nullable: and default: and sets its Field's
// Nullable and Default: the two exclude each other (a default leaves
// nothing missing), and a default must parse as the column's type
// (core.ParseValue of its text: 0 and "0" both suit an int64).
func (f *File) missingValue(c *Column) error {
	if !c.Set["default"] {
		c.Field.Nullable = c.Nullable
		return nil
	}
	at := c.At + ".default"
	if c.Set["nullable"] && c.Nullable {
		return f.errAt(at, "nullable: true and default: exclude each other (a missing value is either null or the default)")
	}
	var text string
	switch d := c.Default.(type) {
	case nil:
		return f.errAt(at, "default is null; to read missing values as null write nullable: true")
	case string:
		text = d
	case bool, int, int64, uint64, float64:
		text = fmt.Sprint(d)
	default:
		return f.errAt(at, "default must be a single value of the column's type (%s), not %T", c.Type, d)
	}
	var v core.Value
	var err error
	if c.Type == core.Timestamp && (c.Format != "" || c.Unit != "" || c.TimeZone != "") {
		// Written as the column's values are (a source-level time_zone
		// does not apply: give the default with an offset, or the
		// column's own time_zone).
		var tf *timeparse.Format
		if tf, err = timeparse.New(c.Format, c.Unit, c.TimeZone); err == nil {
			var ns int64
			if ns, err = tf.Parser().Parse(text); err == nil {
				v = core.TimeValue(ns)
			}
		}
	} else {
		v, err = core.ParseValue(c.Type, text)
	}
	if err != nil {
		return f.errAt(at, "default: %v", err)
	}
	c.Field.Default = &v
	return nil
}

// fields decodes column entries that take the short form only: name: type.
func (f *File) fields(path string, ms yaml.MapSlice) ([]core.Field, error) {
	cs, err := f.columns(path, ms)
	if err != nil {
		return nil, err
	}
	return schemaFields(cs), nil
}

// schemaFields returns the fields of cs.
func schemaFields(cs []Column) []core.Field {
	fs := make([]core.Field, len(cs))
	for i, c := range cs {
		fs[i] = c.Field
	}
	return fs
}

func (f *File) columnString(at string, v any) (string, error) {
	s, ok := v.(string)
	if !ok || s == "" {
		return "", f.errAt(at, "expected a non-empty string")
	}
	return s, nil
}

// mapping returns v as an ordered mapping when it is one (goccy/go-yaml
// decodes a nested mapping under a MapSlice as a MapSlice or a map).
func mapping(v any) (yaml.MapSlice, bool) {
	switch m := v.(type) {
	case yaml.MapSlice:
		return m, true
	case map[string]any:
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		out := make(yaml.MapSlice, 0, len(m))
		for _, k := range keys {
			out = append(out, yaml.MapItem{Key: k, Value: m[k]})
		}
		return out, true
	case map[any]any:
		out := make(yaml.MapSlice, 0, len(m))
		for k, x := range m {
			out = append(out, yaml.MapItem{Key: k, Value: x})
		}
		slices.SortFunc(out, func(a, b yaml.MapItem) int { return strings.Compare(fmt.Sprint(a.Key), fmt.Sprint(b.Key)) })
		return out, true
	}
	return nil, false
}

func listKeys(keys []string) string {
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(", ")
		b.WriteString(k)
	}
	return b.String()
}
