package sched

import (
	"os"

	"golang.org/x/sys/unix"
)

// osCalls is the seam between the package and the kernel. Tests replace
// sys to inject failures; production code never changes it.
type osCalls struct {
	getaffinity func(tid int, set *unix.CPUSet) error // tid 0: calling thread
	setaffinity func(tid int, set *unix.CPUSet) error
	gettid      func() int
	getpid      func() int
	readFile    func(name string) ([]byte, error)
}

var sys = osCalls{
	getaffinity: unix.SchedGetaffinity,
	setaffinity: unix.SchedSetaffinity,
	gettid:      unix.Gettid,
	getpid:      unix.Getpid,
	readFile:    os.ReadFile,
}

// onMainThread reports whether the calling goroutine runs on the process's
// main thread. Meaningful only while the goroutine is locked to its thread.
func onMainThread() bool { return sys.gettid() == sys.getpid() }
