package core

import (
	"testing"
	"unsafe"
)

// OwnLines' slices have at least a cache line of their own array before
// their first T and after their last, whatever the element size (Value: 24
// bytes; a window accumulator: 24; an int64), so no other object shares a
// line that a write to the slice touches.
func TestOwnLinesPadded(t *testing.T) {
	type acc struct{ n, i, w int64 }
	check := func(name string, base, first unsafe.Pointer, n, total, size int) {
		t.Helper()
		before := uintptr(first) - uintptr(base)
		after := uintptr(total*size) - before - uintptr(n*size)
		if before < CacheLine || after < CacheLine {
			t.Fatalf("%s, n %d: %d bytes of padding before, %d after; want a line each", name, n, before, after)
		}
	}
	for n := 1; n <= 64; n++ {
		all, pad := ownLines[Value](n)
		check("Value", unsafe.Pointer(unsafe.SliceData(all)), unsafe.Pointer(&all[pad]), n, len(all), int(unsafe.Sizeof(Value{})))
		a, pad := ownLines[acc](n)
		check("acc", unsafe.Pointer(unsafe.SliceData(a)), unsafe.Pointer(&a[pad]), n, len(a), int(unsafe.Sizeof(acc{})))
		i, pad := ownLines[int64](n)
		check("int64", unsafe.Pointer(unsafe.SliceData(i)), unsafe.Pointer(&i[pad]), n, len(i), 8)
		if s := OwnLines[Value](n); len(s) != n || cap(s) != n {
			t.Fatalf("OwnLines(%d): len %d cap %d", n, len(s), cap(s))
		}
	}
	if s := OwnLines[Value](0); len(s) != 0 {
		t.Fatalf("OwnLines(0) has length %d", len(s))
	}
}
