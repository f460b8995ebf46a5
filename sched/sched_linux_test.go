package sched

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestWorkerAvoidsMainThread makes the first thread the worker starts on
// look like the main thread: the worker must hand the loop to another
// goroutine and pin that one.
func TestWorkerAvoidsMainThread(t *testing.T) {
	var calls atomic.Int32
	var mainTid atomic.Int64
	withSys(t, func(s *osCalls) {
		s.gettid = func() int {
			tid := unix.Gettid()
			if calls.Add(1) == 1 {
				mainTid.Store(int64(tid))
			}
			return tid
		}
		s.getpid = func() int {
			if m := mainTid.Load(); m != 0 {
				return int(m)
			}
			return unix.Getpid()
		}
	})
	var loopTid int
	w := StartWorker(context.Background(), WorkerConfig{Name: "w", Core: OnCPU(Detect().Usable[0])},
		func(context.Context) error {
			loopTid = unix.Gettid()
			return nil
		})
	if err := w.Wait(); err != nil {
		t.Fatal(err)
	}
	if !w.Pinned() {
		t.Fatal("worker not pinned after handoff")
	}
	if int64(loopTid) == mainTid.Load() {
		t.Fatal("loop ran on the 'main' thread")
	}
}

// A locked thread's CPU clock grows while it computes and not while it
// sleeps; the process's clock includes it.
func TestThreadCPU(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p0, t0 := ProcessCPU(), ThreadCPU()
	if t0 <= 0 || p0 < t0 {
		t.Fatalf("thread %v, process %v", t0, p0)
	}
	x := 1
	for ThreadCPU()-t0 < 5*time.Millisecond {
		for i := range 10000 {
			x = x*31 + i
		}
	}
	used := ThreadCPU() - t0
	if p := ProcessCPU() - p0; p < used {
		t.Fatalf("process CPU grew %v, less than the thread's %v (%d)", p, used, x)
	}
	t1 := ThreadCPU()
	time.Sleep(50 * time.Millisecond)
	if d := ThreadCPU() - t1; d > 25*time.Millisecond {
		t.Fatalf("a sleeping thread used %v of CPU", d)
	}
}
