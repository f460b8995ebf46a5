package sched

import "os"

// osCalls is the seam between the package and the kernel. Tests replace
// sys to inject failures; production code never changes it. CPU sets are
// ascending lists of CPU ids.
type osCalls struct {
	// getaffinity returns the affinity of thread tid; tid 0 is the calling
	// thread, the process id is the main thread.
	getaffinity func(tid int) ([]int, error)
	// setaffinity sets the affinity of thread tid (0: calling thread).
	setaffinity func(tid int, cpus []int) error
	gettid      func() int
	getpid      func() int
	readFile    func(name string) ([]byte, error)
}

var sys = osCalls{
	getaffinity: getaffinity,
	setaffinity: setaffinity,
	gettid:      gettid,
	getpid:      os.Getpid,
	readFile:    os.ReadFile,
}

// onMainThread reports whether the calling goroutine runs on the process's
// main thread. Meaningful only while the goroutine is locked to its thread.
func onMainThread() bool { return sys.gettid() == sys.getpid() }
