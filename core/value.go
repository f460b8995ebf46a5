package core

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"streamd/core/timeparse"
)

// Type is the type of a field.
type Type uint8

// The field types. Timestamps are nanoseconds since the Unix epoch, UTC.
const (
	Invalid Type = iota
	Int64
	Float64
	String
	Bool
	Timestamp
)

var typeNames = [...]string{"invalid", "int64", "float64", "string", "bool", "timestamp"}

func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// ParseType maps a type name as written in job.yaml ("int64", "int",
// "float64", "float", "double", "string", "bool", "timestamp") to a Type.
func ParseType(s string) (Type, error) {
	switch s {
	case "int64", "int", "long":
		return Int64, nil
	case "float64", "float", "double":
		return Float64, nil
	case "string":
		return String, nil
	case "bool", "boolean":
		return Bool, nil
	case "timestamp", "time":
		return Timestamp, nil
	}
	return Invalid, fmt.Errorf("unknown type %q (expected int64, float64, string, bool or timestamp)", s)
}

// Value is one field of a record: 24 bytes, no pointer except the string's.
// The field's Type (from the schema) says which accessor is meaningful:
// Int64, Bool and Timestamp use the integer word, Float64 stores its IEEE bits
// there, String uses the string. Values are plain data: copying one copies
// the string header, never the bytes.
type Value struct {
	n uint64
	s string
}

// nullText is the string of Null: its data pointer marks a null (IsNull is
// one pointer compare) and its length and nullN keep Go's == on Values
// (and on window key tuples) apart from every non-null value: a non-null
// numeric value has an empty string, a non-null String value n = 0. It
// points into a variable of its own, not a literal: the linker shares
// equal string literals, so a literal "\x00" elsewhere would be null.
var (
	nullByte = [1]byte{0}
	nullText = unsafe.String(&nullByte[0], 1)
)

// nullN is the integer word of Null.
const nullN = 1

// Null returns the null value (SQL's NULL) of any type: a missing value of
// a Nullable field. It is 24 bytes like every Value and does not allocate.
// The typed accessors (Int, Float, Str, Bool, Time) of a null return
// unspecified values: check IsNull first where the field is Nullable.
func Null() Value { return Value{n: nullN, s: nullText} }

// IsNull reports whether v is Null. Values built any other way (parsed,
// decoded from a snapshot) are never null.
func (v Value) IsNull() bool { return unsafe.StringData(v.s) == unsafe.StringData(nullText) }

// IntValue returns an Int64 value.
func IntValue(i int64) Value { return Value{n: uint64(i)} }

// FloatValue returns a Float64 value.
func FloatValue(f float64) Value { return Value{n: math.Float64bits(f)} }

// StringValue returns a String value. The string is referenced, not copied.
func StringValue(s string) Value { return Value{s: s} }

// BoolValue returns a Bool value.
func BoolValue(b bool) Value {
	if b {
		return Value{n: 1}
	}
	return Value{}
}

// TimeValue returns a Timestamp value from nanoseconds since the Unix epoch.
func TimeValue(ns int64) Value { return Value{n: uint64(ns)} }

// Int returns the value of an Int64 or Timestamp field.
func (v Value) Int() int64 { return int64(v.n) }

// Float returns the value of a Float64 field.
func (v Value) Float() float64 { return math.Float64frombits(v.n) }

// Str returns the value of a String field.
func (v Value) Str() string { return v.s }

// Same reports whether v and w are the same value: v == w, but quick when
// two strings share their bytes (interned keys), as a Go == on the struct
// is not. Null is the same as Null and as no other value (a grouping key:
// SQL's GROUP BY puts all nulls in one group).
func (v Value) Same(w Value) bool {
	return v.n == w.n && len(v.s) == len(w.s) && (unsafe.StringData(v.s) == unsafe.StringData(w.s) || v.s == w.s)
}

// Bool returns the value of a Bool field.
func (v Value) Bool() bool { return v.n != 0 }

// Time returns a Timestamp field as nanoseconds since the Unix epoch.
func (v Value) Time() int64 { return int64(v.n) }

// Any boxes the value as the Go value of type t (int64, float64, string, bool,
// time.Time), Null as nil. It allocates; it is for edges (expressions,
// JSON), not the hot path.
func (v Value) Any(t Type) any {
	if v.IsNull() {
		return nil
	}
	switch t {
	case Int64:
		return v.Int()
	case Float64:
		return v.Float()
	case String:
		return v.s
	case Bool:
		return v.Bool()
	case Timestamp:
		return time.Unix(0, v.Time()).UTC()
	}
	return nil
}

// CompareNullable is Compare for values that may be Null: nulls sort after
// every other value (SQL's NULLS LAST, the default of PostgreSQL and
// DuckDB) and equal each other.
func CompareNullable(t Type, a, b Value) int {
	switch an, bn := a.IsNull(), b.IsNull(); {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	}
	return Compare(t, a, b)
}

// Compare orders two values of type t: -1, 0 or +1. Floats order NaN first.
// Neither may be Null (see CompareNullable).
func Compare(t Type, a, b Value) int {
	switch t {
	case Float64:
		x, y := a.Float(), b.Float()
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		case x == y:
			return 0
		case math.IsNaN(x) && !math.IsNaN(y):
			return -1
		case !math.IsNaN(x) && math.IsNaN(y):
			return 1
		}
		return 0
	case String:
		return strings.Compare(a.s, b.s) // one pass, not < then >
	case Bool:
		return cmpInt(int64(a.n), int64(b.n))
	default:
		return cmpInt(int64(a.n), int64(b.n))
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// AppendText appends the text form of v (of type t) to dst: integers in
// decimal, floats in the shortest form that round-trips, timestamps in
// RFC 3339 UTC (with fractional seconds only when non-zero), bools as
// true/false, strings as they are, Null as nothing (an empty field). It
// does not allocate when dst has room.
func AppendText(dst []byte, t Type, v Value) []byte {
	if v.IsNull() {
		return dst
	}
	switch t {
	case Int64:
		return strconv.AppendInt(dst, v.Int(), 10)
	case Float64:
		return strconv.AppendFloat(dst, v.Float(), 'g', -1, 64)
	case String:
		return append(dst, v.s...)
	case Bool:
		return strconv.AppendBool(dst, v.Bool())
	case Timestamp:
		return time.Unix(0, v.Time()).UTC().AppendFormat(dst, time.RFC3339Nano)
	}
	return dst
}

// ParseValue parses the text form of a value of type t. Timestamps accept
// RFC 3339 (with or without fractional seconds), "2006-01-02 15:04:05",
// a date "2006-01-02", or an integer number of nanoseconds since the epoch.
// A String value references s itself.
func ParseValue(t Type, s string) (Value, error) {
	switch t {
	case Int64:
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return Value{}, fmt.Errorf("%q is not an int64", s)
		}
		return IntValue(i), nil
	case Float64:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return Value{}, fmt.Errorf("%q is not a float64", s)
		}
		return FloatValue(f), nil
	case String:
		return StringValue(s), nil
	case Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return Value{}, fmt.Errorf("%q is not a bool", s)
		}
		return BoolValue(b), nil
	case Timestamp:
		ns, err := ParseTime(s)
		if err != nil {
			return Value{}, err
		}
		return TimeValue(ns), nil
	}
	return Value{}, fmt.Errorf("cannot parse a %s", t)
}

// ParseTime parses a timestamp (see ParseValue) into ns since the epoch,
// UTC (timeparse.ParseDefault: the common forms are read by hand, without
// allocating).
func ParseTime(s string) (int64, error) { return timeparse.ParseDefault(s) }
