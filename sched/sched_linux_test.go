package sched

import (
	"context"
	"sync/atomic"
	"testing"

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
