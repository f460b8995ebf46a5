package ops

import (
	"fmt"

	"streamd/core"
)

// LookupField is one column a lookup adds to each record: table column (or
// JSON field) Column, named As in the output (Column if empty), of Type
// (String if zero).
type LookupField struct {
	Column string
	As     string
	Type   core.Type
}

func (f LookupField) name() string {
	if f.As != "" {
		return f.As
	}
	return f.Column
}

func (f LookupField) typ() core.Type {
	if f.Type == core.Invalid {
		return core.String
	}
	return f.Type
}

// miss is what a lookup does with a record whose key is not in the table.
type miss uint8

const (
	// missNull adds zero values ("", 0, false, the epoch): a LEFT JOIN.
	missNull miss = iota
	// missDrop drops the record.
	missDrop
	// missError reports the record to the error policy.
	missError
)

// parseMiss maps on_miss: "" (the default), "null" or "empty" → add zero
// values; "drop"; "error".
func parseMiss(s string) (miss, error) {
	switch s {
	case "", "null", "empty":
		return missNull, nil
	case "drop":
		return missDrop, nil
	case "error":
		return missError, nil
	}
	return missNull, fmt.Errorf("on_miss %q: expected null, empty, drop or error", s)
}

// joinSchema is in's fields followed by add's; names must not clash.
func joinSchema(in *core.Schema, add []core.Field) (*core.Schema, error) {
	for _, f := range add {
		if in.Index(f.Name) >= 0 {
			return nil, fmt.Errorf("field %q is already in the input (rename it with \"column as name\")", f.Name)
		}
	}
	return core.NewSchema(append(append([]core.Field(nil), in.Fields...), add...)...)
}

// keyText returns the lookup key of value v of type t: a string field's
// value as is, other types in their text form (core.AppendText) built in
// buf. The result may alias buf.
func keyText(t core.Type, v core.Value, buf *[]byte) (key string, inBuf bool) {
	if t == core.String {
		return v.Str(), false
	}
	*buf = core.AppendText((*buf)[:0], t, v)
	return "", true
}
