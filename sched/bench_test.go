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
	var err error
	offMain(func() {
		b.ResetTimer()
		for i := 0; i < b.N && err == nil; i++ {
			var unpin func()
			unpin, err = Pin(cpu)
			unpin()
		}
		b.StopTimer()
	})
	if err != nil {
		b.Fatal(err)
	}
}

// offMain runs f on a goroutine locked to a thread other than the main
// thread, with the same handoff as StartWorker.
func offMain(f func()) {
	done := make(chan struct{})
	var start func()
	start = func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if onMainThread() {
			go start()
			<-done
			return
		}
		f()
		close(done)
	}
	go start()
	<-done
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
