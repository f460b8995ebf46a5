package sched

import (
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// maxCPU is the size of the kernel CPU set that x/sys/unix passes
// (CPU_SETSIZE, 1024).
const maxCPU = len(unix.CPUSet{}) * 64

func getaffinity(tid int) ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(tid, &set); err != nil {
		return nil, err
	}
	var ids []int
	for i := 0; i < maxCPU; i++ {
		if set.IsSet(i) {
			ids = append(ids, i)
		}
	}
	return ids, nil
}

func setaffinity(tid int, cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		if c < 0 || c >= maxCPU {
			return fmt.Errorf("cpu %d out of range [0, %d)", c, maxCPU)
		}
		set.Set(c)
	}
	return unix.SchedSetaffinity(tid, &set)
}

func gettid() int { return unix.Gettid() }

func threadCPU() time.Duration  { return clock(unix.CLOCK_THREAD_CPUTIME_ID) }
func processCPU() time.Duration { return clock(unix.CLOCK_PROCESS_CPUTIME_ID) }

// clock reads the clock id by a raw system call: clock_gettime never
// blocks, and without the scheduler's syscall bracket (what
// unix.ClockGettime does) the calling thread keeps its P throughout. With
// the bracket, a thread preempted by the host inside the call (a loaded
// VM, where the thread clocks are not vDSO reads) could have its P taken
// by sysmon and handed to another thread, and on return wait for a P
// again: thread switches that a stage reading its clock around every ring
// wait would pay many times a second.
func clock(id int32) time.Duration {
	var ts unix.Timespec
	_, _, errno := unix.RawSyscall(unix.SYS_CLOCK_GETTIME, uintptr(id), uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}
