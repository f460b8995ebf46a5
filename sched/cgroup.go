package sched

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// Quota is a cgroup CPU bandwidth limit: QuotaUs of CPU time per PeriodUs
// of wall time, in microseconds.
type Quota struct {
	QuotaUs  int64  // < 0: no limit
	PeriodUs int64  // > 0 when QuotaUs >= 0
	File     string // where it was read; "" when no limit file was found
	Version  int    // cgroup version of File: 1 or 2; 0 when File is ""
}

// Limited reports whether the quota limits the process.
func (q Quota) Limited() bool { return q.QuotaUs >= 0 && q.PeriodUs > 0 }

// Cores returns the quota rounded down to whole cores, at least 1; 0 when
// the quota does not limit the process.
func (q Quota) Cores() int {
	if !q.Limited() {
		return 0
	}
	return max(1, int(q.QuotaUs/q.PeriodUs))
}

func (q Quota) String() string {
	switch {
	case q.File == "":
		return "cgroup cpu quota none found"
	case q.Version == 2 && !q.Limited():
		return "cgroup cpu.max max"
	case q.Version == 2:
		return fmt.Sprintf("cgroup cpu.max %d/%d → %d cores", q.QuotaUs, q.PeriodUs, q.Cores())
	case !q.Limited():
		return "cgroup v1 cpu.cfs_quota_us -1"
	default:
		return fmt.Sprintf("cgroup v1 cfs quota %d/%d → %d cores", q.QuotaUs, q.PeriodUs, q.Cores())
	}
}

// readQuota finds the tightest CPU quota of the calling process's cgroup
// and its ancestors, v2 first, then v1. A missing cgroup file system is
// not an error: it yields an unlimited Quota with no File.
func readQuota(readFile func(string) ([]byte, error)) (Quota, error) {
	cg, err := readFile("/proc/self/cgroup")
	if err != nil {
		return Quota{QuotaUs: -1}, fmt.Errorf("read /proc/self/cgroup: %w", err)
	}
	mi, err := readFile("/proc/self/mountinfo")
	if err != nil {
		return Quota{QuotaUs: -1}, fmt.Errorf("read /proc/self/mountinfo: %w", err)
	}
	v2path, v1path := parseProcCgroup(cg)
	v2mnt, v1mnt := parseMountinfo(mi)

	best := Quota{QuotaUs: -1}
	var firstErr error
	consider := func(q Quota, err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
		switch {
		case q.File == "":
		case best.File == "":
			best = q
		case q.Limited() && (!best.Limited() || q.QuotaUs*best.PeriodUs < best.QuotaUs*q.PeriodUs):
			best = q
		}
	}
	if v2mnt.point != "" && v2path != "" {
		for _, dir := range cgroupDirs(v2mnt, v2path) {
			consider(readCPUMax(readFile, dir+"/cpu.max"))
		}
	}
	if best.File == "" && v1mnt.point != "" && v1path != "" {
		for _, dir := range cgroupDirs(v1mnt, v1path) {
			consider(readCFS(readFile, dir))
		}
	}
	return best, firstErr
}

// parseProcCgroup returns the v2 cgroup path ("0::/path") and the v1 path
// of the hierarchy with the cpu controller, from /proc/self/cgroup.
func parseProcCgroup(b []byte) (v2, v1cpu string) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			v2 = f[2]
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == "cpu" {
				v1cpu = f[2]
			}
		}
	}
	return v2, v1cpu
}

// mount is a cgroup mount: the cgroup path at its root and where it is
// mounted.
type mount struct{ root, point string }

// parseMountinfo finds the cgroup2 mount and the v1 mount carrying the cpu
// controller in /proc/self/mountinfo (proc(5): "id parent maj:min root
// point options [optional...] - fstype source superoptions").
func parseMountinfo(b []byte) (v2, v1cpu mount) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 1 {
			continue
		}
		m := mount{root: unescapeMount(f[3]), point: unescapeMount(f[4])}
		switch g[0] {
		case "cgroup2":
			if v2.point == "" {
				v2 = m
			}
		case "cgroup":
			if len(g) < 3 {
				continue
			}
			for _, o := range strings.Split(g[2], ",") {
				if o == "cpu" && v1cpu.point == "" {
					v1cpu = m
				}
			}
		}
	}
	return v2, v1cpu
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space …).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cgroupDirs lists the directories of the cgroup at cgPath and of its
// ancestors up to the mount's root, deepest first. When the cgroup path is
// not below the mount's root (a cgroup namespace or a bind mount of a
// subtree), the mount point itself is the process's cgroup.
func cgroupDirs(m mount, cgPath string) []string {
	rel := "/"
	if m.root == "/" {
		rel = cgPath
	} else if r, ok := strings.CutPrefix(cgPath, m.root); ok && (r == "" || r[0] == '/') {
		rel = r
	}
	rel = path.Clean("/" + rel)
	var dirs []string
	for {
		dirs = append(dirs, path.Join(m.point, rel))
		if rel == "/" {
			return dirs
		}
		rel = path.Dir(rel)
	}
}

// readCPUMax reads a cgroup v2 cpu.max file. A missing file (the root
// cgroup has none) yields a Quota without File and no error.
func readCPUMax(readFile func(string) ([]byte, error), file string) (Quota, error) {
	b, err := readFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return Quota{QuotaUs: -1}, nil
	}
	if err != nil {
		return Quota{QuotaUs: -1}, fmt.Errorf("read %s: %w", file, err)
	}
	q, err := parseCPUMax(string(b))
	if err != nil {
		return Quota{QuotaUs: -1}, fmt.Errorf("parse %s: %w", file, err)
	}
	q.File, q.Version = file, 2
	return q, nil
}

// parseCPUMax parses the content of a cgroup v2 cpu.max file: "$MAX
// $PERIOD", where $MAX is "max" (no limit) or microseconds; $PERIOD
// defaults to 100000.
func parseCPUMax(s string) (Quota, error) {
	f := strings.Fields(s)
	if len(f) < 1 || len(f) > 2 {
		return Quota{}, fmt.Errorf("want \"$MAX $PERIOD\", got %q", s)
	}
	q := Quota{QuotaUs: -1, PeriodUs: 100000}
	if len(f) == 2 {
		p, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || p <= 0 {
			return Quota{}, fmt.Errorf("bad period %q", f[1])
		}
		q.PeriodUs = p
	}
	if f[0] != "max" {
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || v <= 0 {
			return Quota{}, fmt.Errorf("bad quota %q", f[0])
		}
		q.QuotaUs = v
	}
	return q, nil
}

// readCFS reads the cgroup v1 pair cpu.cfs_quota_us / cpu.cfs_period_us in
// dir. Missing files yield a Quota without File and no error.
func readCFS(readFile func(string) ([]byte, error), dir string) (Quota, error) {
	qf, pf := dir+"/cpu.cfs_quota_us", dir+"/cpu.cfs_period_us"
	qb, err := readFile(qf)
	if errors.Is(err, fs.ErrNotExist) {
		return Quota{QuotaUs: -1}, nil
	}
	if err != nil {
		return Quota{QuotaUs: -1}, fmt.Errorf("read %s: %w", qf, err)
	}
	pb, err := readFile(pf)
	if err != nil {
		return Quota{QuotaUs: -1}, fmt.Errorf("read %s: %w", pf, err)
	}
	q, err := parseCFS(string(qb), string(pb))
	if err != nil {
		return Quota{QuotaUs: -1}, fmt.Errorf("parse %s: %w", qf, err)
	}
	q.File, q.Version = qf, 1
	return q, nil
}

// parseCFS parses cgroup v1 cpu.cfs_quota_us (-1: no limit) and
// cpu.cfs_period_us.
func parseCFS(quota, period string) (Quota, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(quota), 10, 64)
	if err != nil {
		return Quota{}, fmt.Errorf("bad quota %q", quota)
	}
	p, err := strconv.ParseInt(strings.TrimSpace(period), 10, 64)
	if err != nil || p <= 0 {
		return Quota{}, fmt.Errorf("bad period %q", period)
	}
	if v < 0 {
		v = -1
	}
	return Quota{QuotaUs: v, PeriodUs: p}, nil
}
