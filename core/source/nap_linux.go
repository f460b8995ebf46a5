package source

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// nap sleeps the calling thread for about d (a wait of at most a few
// hundred µs: a paced source's wait for its next batch), without the Go
// runtime's timers, whose poller rounds a wait up to a whole millisecond.
// It keeps its P: a raw clock_nanosleep is invisible to the scheduler, so
// sysmon does not hand the P off and back for each nap (that doubled the
// CPU a nap costs); the goroutine is therefore not preemptible while it
// sleeps, which is why d stays short. It may return early (a signal, such
// as the runtime's preemption request, interrupts it). The thread's timer
// slack is first set to napSlack: the default 50 µs would add as much to
// every paced batch's latency; the setting stays with the thread, whichever
// goroutine runs on it later (its timed waits then end closer to their
// time, nothing else). Callers loop on their clock.
func nap(d time.Duration) {
	unix.RawSyscall6(unix.SYS_PRCTL, unix.PR_SET_TIMERSLACK, uintptr(napSlack), 0, 0, 0, 0)
	ts := unix.NsecToTimespec(int64(d))
	unix.RawSyscall6(unix.SYS_CLOCK_NANOSLEEP, uintptr(unix.CLOCK_MONOTONIC), 0, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
}

// napSlack is the timer slack nap sets on its thread, in ns.
const napSlack = 1000
