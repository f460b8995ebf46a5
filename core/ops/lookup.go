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
	// missEmpty adds zero values ("", 0, false, the epoch).
	missEmpty miss = iota
	// missNull adds nulls: SQL's LEFT JOIN (the added fields are
	// Nullable).
	missNull
	// missDrop drops the record.
	missDrop
	// missError reports the record to the error policy.
	missError
)

// parseMiss maps on_miss: "" (the default; YAML's null decodes as "" too)
// or "null" → add nulls, as SQL's LEFT JOIN; "empty" → add zero values;
// "drop"; "error".
func parseMiss(s string) (miss, error) {
	switch s {
	case "", "null":
		return missNull, nil
	case "empty":
		return missEmpty, nil
	case "drop":
		return missDrop, nil
	case "error":
		return missError, nil
	}
	return missNull, fmt.Errorf("on_miss %q: expected null, empty, drop or error", s)
}

// joinSchema is in's fields followed by add's; names must not clash.
// Under missNull the added fields are Nullable.
func joinSchema(in *core.Schema, add []core.Field, m miss) (*core.Schema, error) {
	for _, f := range add {
		if in.Index(f.Name) >= 0 {
			return nil, fmt.Errorf("field %q is already in the input (rename it with \"column as name\")", f.Name)
		}
	}
	fs := append([]core.Field(nil), in.Fields...)
	for _, f := range add {
		if m == missNull {
			f.Nullable, f.Default = true, nil
		}
		fs = append(fs, f)
	}
	return core.NewSchema(fs...)
}

// missFill is what a miss adds under m (missEmpty or missNull): n zero
// values or n nulls.
func missFill(m miss, n int) []core.Value {
	fill := make([]core.Value, n)
	if m == missNull {
		for i := range fill {
			fill[i] = core.Null()
		}
	}
	return fill
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
