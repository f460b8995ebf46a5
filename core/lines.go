package core

import "unsafe"

// CacheLine is the CPU cache line, in bytes, of the machines streamd runs
// on (x86-64; 64 on most arm64 servers as well).
const CacheLine = 64

// OwnLines returns a slice of n zero Ts that shares no cache line with any
// other object: its array has a line's worth of unused Ts before and after
// it. An operator instance's per-record scratch (a map's computed values,
// a window's accumulators) is written once or more per record by its
// channel; two channels' scratch arrays in one line make each write
// invalidate the other core's copy (false sharing), and whether two small
// allocations share a line depends on where the allocator put them, so the
// same job ran at two speeds from one process to the next (a map over 2
// channels: 0.36 or 0.53 s of CPU a channel on the same records).
//
// The slice's capacity is n: appending to it reallocates and loses the
// padding. Padding rather than alignment, because the allocator puts a
// header before some objects, so no size makes an array start on a line.
func OwnLines[T any](n int) []T {
	s, pad := ownLines[T](n)
	return s[pad : pad+n : pad+n]
}

// ownLines is OwnLines' whole array and the Ts of padding at each end.
func ownLines[T any](n int) (all []T, pad int) {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if size == 0 || n == 0 {
		return make([]T, n), 0
	}
	pad = (CacheLine + size - 1) / size
	return make([]T, pad+n+pad), pad
}
