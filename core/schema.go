package core

import (
	"fmt"
	"strings"
	"sync"
)

// Field is one named, typed column of a schema.
type Field struct {
	Name string
	Type Type
	// Nullable says the field may hold Null (a missing value, an
	// aggregate over only nulls, an expression over a null). Code that
	// reads a field that is not Nullable never checks for Null, so jobs
	// without nullable columns pay nothing for nulls.
	Nullable bool
	// Default, for a source's column, is the value a missing one takes
	// (then the field is not Nullable); nil for none. Sources read it;
	// operators ignore it.
	Default *Value
}

// Schema is the ordered list of fields of the records on one edge of the job
// graph. A Schema is immutable after NewSchema and owns the pool of batches
// of its width; share it by pointer.
type Schema struct {
	Fields []Field
	index  map[string]int
	pool   sync.Pool
}

// NewSchema builds a schema; field names must be unique and non-empty.
func NewSchema(fields ...Field) (*Schema, error) {
	s := &Schema{Fields: append([]Field(nil), fields...), index: make(map[string]int, len(fields))}
	for i, f := range fields {
		if f.Name == "" {
			return nil, fmt.Errorf("field %d has no name", i)
		}
		if f.Type == Invalid {
			return nil, fmt.Errorf("field %q has no type", f.Name)
		}
		if _, dup := s.index[f.Name]; dup {
			return nil, fmt.Errorf("field %q appears twice", f.Name)
		}
		s.index[f.Name] = i
	}
	return s, nil
}

// MustSchema is NewSchema for fixed schemas in code and tests; it panics on error.
func MustSchema(fields ...Field) *Schema {
	s, err := NewSchema(fields...)
	if err != nil {
		panic(err)
	}
	return s
}

// Width is the number of fields.
func (s *Schema) Width() int { return len(s.Fields) }

// Index returns the position of the named field, or -1.
func (s *Schema) Index(name string) int {
	if i, ok := s.index[name]; ok {
		return i
	}
	return -1
}

// Lookup returns the position of the named field or an error that lists the
// fields there are.
func (s *Schema) Lookup(name string) (int, error) {
	if i, ok := s.index[name]; ok {
		return i, nil
	}
	return -1, fmt.Errorf("no field %q (fields: %s)", name, s.Names())
}

// Names lists the field names, comma-separated.
func (s *Schema) Names() string {
	names := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

func (s *Schema) String() string {
	parts := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		parts[i] = f.Name + " " + f.Type.String()
		if f.Nullable {
			parts[i] += " null"
		}
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
