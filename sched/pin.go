package sched

import (
	"errors"
	"fmt"
	"runtime"
)

// ErrMainThread is returned by Pin when the calling goroutine runs on the
// process's main thread, which Pin never narrows (see the package
// documentation). The goroutine is left unlocked and unpinned.
var ErrMainThread = errors.New("sched: will not pin the main thread")

// Pin locks the calling goroutine to its OS thread and sets that thread's
// affinity to the single CPU cpu. The caller must call unpin, from the same
// goroutine, when it no longer needs the pin (typically deferred); unpin
// restores the thread's previous mask and unlocks the thread. unpin is
// never nil: on error it does nothing, and the goroutine is neither locked
// (beyond locks it held before) nor pinned. Calls nest like
// runtime.LockOSThread, but an inner Pin must be undone before an outer
// one.
//
// Errors: ErrMainThread; a CPU id outside [0, 1024); and the wrapped error
// of sched_getaffinity or sched_setaffinity (EINVAL when cpu is not in the
// cgroup's cpuset, EPERM under a seccomp policy, errors.ErrUnsupported off
// Linux).
//
// If restoring the mask fails, unpin leaves the thread locked, so that the
// runtime destroys the thread when the goroutine exits rather than reusing
// a narrowed thread for other goroutines.
func Pin(cpu int) (unpin func(), err error) {
	noop := func() {}
	if cpu < 0 {
		return noop, fmt.Errorf("sched: pin: negative cpu %d", cpu)
	}
	runtime.LockOSThread()
	if onMainThread() {
		runtime.UnlockOSThread()
		return noop, ErrMainThread
	}
	prev, err := sys.getaffinity(0)
	if err != nil {
		runtime.UnlockOSThread()
		return noop, fmt.Errorf("sched: pin to cpu %d: sched_getaffinity: %w", cpu, err)
	}
	if err := sys.setaffinity(0, []int{cpu}); err != nil {
		runtime.UnlockOSThread()
		return noop, fmt.Errorf("sched: pin to cpu %d: sched_setaffinity: %w", cpu, err)
	}
	done := false
	return func() {
		if done {
			return
		}
		done = true
		if sys.setaffinity(0, prev) != nil {
			return // stay locked: the thread dies with the goroutine
		}
		runtime.UnlockOSThread()
	}, nil
}

// ThreadAffinity returns the CPU ids the calling thread may run on. It is
// meaningful only while the goroutine is locked to its thread (inside a
// Worker's loop or between Pin and unpin); used by tests and diagnostics.
func ThreadAffinity() ([]int, error) {
	ids, err := sys.getaffinity(0)
	if err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	return ids, nil
}
