package core

import (
	"strings"
	"testing"
)

// Same is == on values, whether or not two strings share their bytes.
func TestValueSame(t *testing.T) {
	abc := "abc"
	built := strings.Repeat("ab", 1) + "c" // equal bytes, other storage
	vals := []Value{IntValue(0), IntValue(1), IntValue(-1), FloatValue(0.5), StringValue(""), StringValue(abc),
		StringValue(built), StringValue(abc[:2]), StringValue("abd"), StringValue("abcd"), {n: 1, s: abc}}
	for _, a := range vals {
		for _, b := range vals {
			if got, want := a.Same(b), a == b; got != want {
				t.Errorf("Same(%#v, %#v) = %v, == says %v", a, b, got, want)
			}
		}
	}
}
