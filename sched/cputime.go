package sched

import "time"

// ThreadCPU returns the CPU time the calling OS thread has used
// (CLOCK_THREAD_CPUTIME_ID: user + system, ns resolution), or 0 where the
// clock is missing. It measures a goroutine only while the goroutine is
// locked to its thread (runtime.LockOSThread; a sched.Worker is). It is a
// system call (~0.2–1 µs): call it per stage or per wait, not per record.
func ThreadCPU() time.Duration { return threadCPU() }

// ProcessCPU returns the CPU time all threads of the process have used
// (CLOCK_PROCESS_CPUTIME_ID), or 0 where the clock is missing.
func ProcessCPU() time.Duration { return processCPU() }
