package sched

import (
	"log/slog"
	"runtime"
	"testing"
)

// BenchmarkPin measures one Pin + unpin: two sched_setaffinity calls, one
// sched_getaffinity, and the thread lock. Paid once per worker start, not
// per record.
func BenchmarkPin(b *testing.B) {
	b.ReportAllocs()
	cpu := Detect().Usable[0]
	runtime.LockOSThread() // stay off the main thread's accounting
	defer runtime.UnlockOSThread()
	if onMainThread() {
		b.Skip("benchmark goroutine is on the main thread")
	}
	for b.Loop() {
		unpin, err := Pin(cpu)
		if err != nil {
			b.Fatal(err)
		}
		unpin()
	}
}

// BenchmarkLease measures one Lease + Release under the allocator's mutex.
func BenchmarkLease(b *testing.B) {
	b.ReportAllocs()
	a := NewAllocator([]int{0, 1, 2, 3}, AllocatorConfig{Logger: slog.New(slog.DiscardHandler)})
	for b.Loop() {
		c, _ := a.Lease()
		a.Release(c)
	}
}
