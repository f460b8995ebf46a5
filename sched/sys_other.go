//go:build !linux

package sched

import (
	"errors"
	"time"
)

// Off Linux there is no thread affinity call: Pin fails with
// errors.ErrUnsupported, workers run unpinned, and Detect falls back to
// runtime.NumCPU. streamd builds and runs; it does not pin.

func getaffinity(int) ([]int, error) { return nil, errors.ErrUnsupported }
func setaffinity(int, []int) error   { return errors.ErrUnsupported }
func gettid() int                    { return -1 } // never the main thread

func threadCPU() time.Duration  { return 0 }
func processCPU() time.Duration { return 0 }
