package sched

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
)

// CPUs is the set of CPUs streamd may use, with the sources of each number.
// See the package documentation for the rule.
type CPUs struct {
	// Affinity is the process's affinity mask (of the main thread), CPU ids
	// in ascending order. When it could not be read it is
	// 0..runtime.NumCPU()-1 and AffinityErr says why.
	Affinity    []int
	AffinityErr error

	// Quota is the tightest cgroup CPU quota found; QuotaErr says what
	// could not be read (the quota is then treated as no limit).
	Quota    Quota
	QuotaErr error

	// Usable lists the CPUs to pin to: the first Cores() of Affinity.
	Usable []int
}

// Cores returns the number of usable cores, at least 1.
func (c CPUs) Cores() int { return len(c.Usable) }

// String returns a line for the startup log, e.g.
//
//	cpus: affinity 0-15 (16), cgroup cpu.max 400000/100000 → 4 cores; usable 4 (0-3)
func (c CPUs) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cpus: affinity %s (%d)", FormatList(c.Affinity), len(c.Affinity))
	if c.AffinityErr != nil {
		fmt.Fprintf(&b, " [from runtime.NumCPU: %v]", c.AffinityErr)
	}
	fmt.Fprintf(&b, ", %s", c.Quota)
	if c.Quota.File != "" {
		fmt.Fprintf(&b, " (%s)", c.Quota.File)
	}
	if c.QuotaErr != nil {
		fmt.Fprintf(&b, " [%v]", c.QuotaErr)
	}
	fmt.Fprintf(&b, "; usable %d (%s)", c.Cores(), FormatList(c.Usable))
	return b.String()
}

// Detect reads the process's affinity mask and cgroup CPU quota and
// returns the usable CPU set. It never fails; see CPUs for how failures
// are reported. It does not depend on the calling goroutine being pinned:
// it reads the main thread's mask, which Pin never narrows.
func Detect() CPUs {
	var c CPUs
	c.Affinity, c.AffinityErr = processAffinity()
	c.Quota, c.QuotaErr = readQuota(sys.readFile)
	c.Usable = usable(c.Affinity, c.Quota)
	return c
}

func processAffinity() ([]int, error) {
	ids, err := sys.getaffinity(sys.getpid())
	if err != nil {
		return seq(runtime.NumCPU()), fmt.Errorf("sched_getaffinity: %w", err)
	}
	if len(ids) == 0 {
		return seq(runtime.NumCPU()), fmt.Errorf("sched_getaffinity: empty mask")
	}
	return ids, nil
}

// usable applies the quota to the affinity list.
func usable(affinity []int, q Quota) []int {
	n := len(affinity)
	if q.Limited() {
		n = min(n, q.Cores())
	}
	return append([]int(nil), affinity[:max(n, 1)]...)
}

func seq(n int) []int {
	ids := make([]int, max(n, 1))
	for i := range ids {
		ids[i] = i
	}
	return ids
}

// FormatList formats ascending CPU ids as a Linux cpu list: "0-3,8,10-11".
func FormatList(ids []int) string {
	if len(ids) == 0 {
		return "none"
	}
	var b strings.Builder
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(ids[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(ids[j]))
		}
		i = j + 1
	}
	return b.String()
}

// MaxProcs returns the recommended GOMAXPROCS for a job that pins `pinned`
// workers on `usable` cores: max(usable, pinned+1), at least 1. See the
// package documentation for the reasoning. It sets nothing.
func MaxProcs(usable, pinned int) int {
	return max(usable, pinned+1, 1)
}
