package core

import (
	"testing"
	"unsafe"
)

// TestNullIsApart checks the representation's promises: Null is 24 bytes,
// IsNull tells it from every zero and from the string "\x00", and Go's ==
// (window key tuples key maps with it) and Same agree.
func TestNullIsApart(t *testing.T) {
	if s := unsafe.Sizeof(Null()); s != 24 {
		t.Fatalf("Null is %d bytes, want 24", s)
	}
	others := []Value{IntValue(0), IntValue(1), FloatValue(0), StringValue(""), StringValue("\x00"), BoolValue(false), BoolValue(true), TimeValue(0), {}}
	n := Null()
	if !n.IsNull() || !n.Same(Null()) || n != Null() {
		t.Fatal("Null is not null, or not the same as Null")
	}
	for _, v := range others {
		if v.IsNull() {
			t.Errorf("%#v is null", v)
		}
		if v == n || v.Same(n) || n.Same(v) {
			t.Errorf("%#v equals Null", v)
		}
	}
	// An empty string that is a slice of a buffer is not null either.
	buf := "abc"
	if StringValue(buf[3:]).IsNull() {
		t.Error("an empty slice is null")
	}
}

func TestNullText(t *testing.T) {
	for _, ty := range []Type{Int64, Float64, String, Bool, Timestamp} {
		if got := AppendText([]byte("x"), ty, Null()); string(got) != "x" {
			t.Errorf("%s: AppendText(Null) = %q, want nothing appended", ty, got)
		}
		if a := Null().Any(ty); a != nil {
			t.Errorf("%s: Any(Null) = %v, want nil", ty, a)
		}
	}
}

func TestCompareNullableNullsLast(t *testing.T) {
	cases := []struct {
		a, b Value
		want int
	}{
		{Null(), Null(), 0},
		{Null(), IntValue(1 << 62), 1},
		{IntValue(-5), Null(), -1},
		{IntValue(2), IntValue(3), -1},
	}
	for _, c := range cases {
		if got := CompareNullable(Int64, c.a, c.b); got != c.want {
			t.Errorf("CompareNullable(%#v, %#v) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
	if CompareNullable(String, StringValue("\xff\xff"), Null()) != -1 {
		t.Error("a string sorts after null")
	}
}
