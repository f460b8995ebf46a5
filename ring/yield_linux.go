package ring

import "syscall"

// osYield gives the CPU to another runnable OS thread on this core, if
// any, through sched_yield(2) (about 0.7 µs on an idle core). It is used
// rather than runtime.Gosched because streamd's ring users are goroutines
// locked to pinned threads (sched.Worker), and Gosched on a locked thread
// hands the goroutine through the scheduler and back to its thread: two
// futex sleeps and wakes, about 28 µs measured on this project's build VM.
// RawSyscall: the call does not block, so the runtime need not be told.
func osYield() {
	syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
}
