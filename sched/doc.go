// Package sched decides where streamd's goroutines run: which CPUs the
// process may use, how a goroutine's OS thread is pinned to one of them,
// and which channel (parallel-region replica) gets which core.
//
// # The usable CPU set
//
// Detect reads two limits and records where each number came from:
//
//   - the process affinity mask, sched_getaffinity of the main thread
//     (taskset, cpuset cgroups and container runtimes narrow it);
//   - the cgroup CPU bandwidth quota: cgroup v2 cpu.max ("max" = no limit),
//     or cgroup v1 cpu.cfs_quota_us / cpu.cfs_period_us (-1 = no limit),
//     found through /proc/self/cgroup and /proc/self/mountinfo; the
//     tightest limit of the process's cgroup and its ancestors counts.
//
// The number of usable cores is min(len(affinity), floor(quota/period)),
// at least 1: the quota is rounded down, because a pinned worker that
// busy-waits uses a whole core, and 1.5 cores of quota cannot carry two of
// them without throttling. The usable CPUs are the first that many CPUs of
// the affinity mask, in ascending order (Linux numbers the first hardware
// thread of every physical core before the SMT siblings on common x86
// machines, so the first N usually avoids sharing a core). Detect never
// fails: what it could not read is reported in CPUs.String and the fields
// ending in Err, and the set falls back to runtime.NumCPU().
//
// # Pinning
//
// Pin locks the calling goroutine to its OS thread (runtime.LockOSThread)
// and narrows that thread's affinity to one CPU. The returned unpin
// restores the thread's previous mask and unlocks it, so the thread goes
// back to the runtime's pool exactly as it was. Pin never narrows the main
// thread (thread id == process id): the runtime may run any goroutine on
// it after an unlock, and the main thread's mask is what tools and Detect
// read as "the process's" affinity. A worker goroutine can find itself on
// the main thread, because any goroutine can; Pin then returns
// ErrMainThread, and Worker avoids the case altogether (see Worker). If
// restoring the mask fails, unpin leaves the thread locked: the runtime
// then destroys the thread when the goroutine exits instead of reusing a
// narrowed thread.
//
// # Allocator
//
// An Allocator hands out the usable CPUs as leases (Core). The first
// Reserved CPUs are kept out of the pool for the stages that run once per
// job (source, splitter, merger/sink); at least one CPU always stays in the
// pool. A pinned Core is leased to at most one holder at a time. When the
// pool is empty, Lease returns an unpinned Core instead of failing and the
// allocator logs one warning for its lifetime: streamd runs, more slowly,
// on a 2-core machine.
//
// # Workers
//
// A Worker runs a loop on a goroutine locked to a thread pinned to its
// Core (or unpinned), stops through its context, returns the loop's error,
// unpins and releases the core. A panic in the loop is recovered and
// returned as a *PanicError (value and stack), so that one failing channel
// stops the job with an error instead of killing the process without its
// checkpoint and exit path; the core is released either way.
//
// # GOMAXPROCS
//
// MaxProcs(usable, pinned) = max(usable, pinned+1). Every pinned worker
// holds a P while it runs (it spins, then parks, on its rings); the
// runtime needs at least one more P for the GC's mark workers, timers and
// the unpinned goroutines (source, sink, controller, checkpoint writer).
// More Ps than usable cores beyond that would only add OS time-slicing.
// Nothing here sets GOMAXPROCS: the runtime that knows how many workers it
// pins calls MaxProcs and runtime.GOMAXPROCS itself. (Since Go 1.25 the
// default GOMAXPROCS already follows the cgroup limit, rounded up.)
//
// # Testing seam
//
// The affinity system calls go through an unexported variable, so tests
// inject failures; nothing else in the package touches the kernel.
package sched
