package sched

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
)

// Core is a lease of a CPU to pin one worker to, or an unpinned lease. The
// zero value is the unpinned lease.
type Core struct {
	cpu    int
	pinned bool
}

// OnCPU returns a pinned Core for cpu, for callers that pin without an
// Allocator (benchmarks, tools). It does not reserve anything.
func OnCPU(cpu int) Core { return Core{cpu: cpu, pinned: true} }

// Pinned reports whether the lease names a CPU.
func (c Core) Pinned() bool { return c.pinned }

// CPU returns the CPU id, or -1 for an unpinned lease.
func (c Core) CPU() int {
	if !c.pinned {
		return -1
	}
	return c.cpu
}

func (c Core) String() string {
	if !c.pinned {
		return "unpinned"
	}
	return fmt.Sprintf("cpu %d", c.cpu)
}

// AllocatorConfig configures NewAllocator.
type AllocatorConfig struct {
	// Reserved is how many of the usable CPUs (the first ones) are kept out
	// of the pool for the job's single stages: source, splitter,
	// merger/sink. At most len(cpus)-1 are reserved, so that the pool keeps
	// at least one CPU.
	Reserved int
	// Logger receives the allocator's warnings; nil means slog.Default().
	Logger *slog.Logger
}

// Allocator leases the usable CPUs to workers, one worker per CPU. When it
// has no free CPU it hands out unpinned leases and warns once. It is safe
// for concurrent use; it is not on the data path (a mutex guards it).
type Allocator struct {
	mu       sync.Mutex
	reserved []int
	pool     []int  // leasable CPU ids, ascending
	leased   []bool // leased[i]: pool[i] is out
	nFree    int
	log      *slog.Logger
	warned   map[string]bool
}

// NewAllocator returns an allocator over cpus (typically CPUs.Usable).
func NewAllocator(cpus []int, cfg AllocatorConfig) *Allocator {
	r := min(max(cfg.Reserved, 0), max(len(cpus)-1, 0))
	a := &Allocator{
		reserved: append([]int(nil), cpus[:r]...),
		pool:     append([]int(nil), cpus[r:]...),
		log:      cfg.Logger,
		warned:   map[string]bool{},
	}
	if a.log == nil {
		a.log = slog.Default()
	}
	a.leased = make([]bool, len(a.pool))
	a.nFree = len(a.pool)
	return a
}

// Reserved returns the reserved CPUs as pinned Cores, for the runtime to
// pin the source, splitter and merger to (it may share them). They are
// never leased.
func (a *Allocator) Reserved() []Core {
	cs := make([]Core, len(a.reserved))
	for i, cpu := range a.reserved {
		cs[i] = OnCPU(cpu)
	}
	return cs
}

// Size returns the number of CPUs in the pool (usable minus reserved).
func (a *Allocator) Size() int { return len(a.pool) }

// Free returns the number of pool CPUs not leased now.
func (a *Allocator) Free() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.nFree
}

// Lease returns the lowest free CPU of the pool as a pinned Core and true.
// When none is free it returns an unpinned Core and false, and logs one
// warning in the allocator's lifetime: more workers than cores is slower,
// not an error. A pinned Core is never leased again before Release.
func (a *Allocator) Lease() (Core, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, out := range a.leased {
		if !out {
			a.leased[i] = true
			a.nFree--
			return OnCPU(a.pool[i]), true
		}
	}
	a.warnOnceLocked("lease", "sched: more workers than free cores; extra workers run unpinned",
		"pool", len(a.pool), "reserved", len(a.reserved))
	return Core{}, false
}

// Release returns a lease. Releasing an unpinned Core does nothing.
// Releasing a pinned Core that is not leased from this allocator panics:
// it is a double release, and the allocator could otherwise lease one core
// twice.
func (a *Allocator) Release(c Core) {
	if !c.pinned {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, cpu := range a.pool {
		if cpu == c.cpu {
			if !a.leased[i] {
				panic(fmt.Sprintf("sched: release of %s, which is not leased", c))
			}
			a.leased[i] = false
			a.nFree++
			return
		}
	}
	panic(fmt.Sprintf("sched: release of %s, which is not in the pool", c))
}

// Start leases a core and starts a Worker named name on it; the worker
// releases the core when its loop returns. A failed pin is logged once per
// allocator (the worker runs unpinned).
func (a *Allocator) Start(ctx context.Context, name string, loop func(context.Context) error) *Worker {
	c, _ := a.Lease()
	return StartWorker(ctx, WorkerConfig{
		Name:    name,
		Core:    c,
		Release: a.Release,
		Warn: func(msg string, args ...any) {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.warnOnceLocked("pin", msg, args...)
		},
	}, loop)
}

func (a *Allocator) warnOnceLocked(key, msg string, args ...any) {
	if a.warned[key] {
		return
	}
	a.warned[key] = true
	a.log.Warn(msg, args...)
}
