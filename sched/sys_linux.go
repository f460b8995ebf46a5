package sched

import (
	"fmt"
	"time"

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

func clock(id int32) time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(id, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
