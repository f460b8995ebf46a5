package sched

import (
	"io/fs"
	"reflect"
	"strings"
	"testing"
)

func TestParseCPUMax(t *testing.T) {
	for _, tc := range []struct {
		in    string
		quota int64
		per   int64
		cores int
	}{
		{"max 100000\n", -1, 100000, 0},
		{"max", -1, 100000, 0},
		{"400000 100000\n", 400000, 100000, 4},
		{"150000 100000", 150000, 100000, 1}, // rounded down
		{"50000 100000", 50000, 100000, 1},   // at least 1
		{"200000", 200000, 100000, 2},        // default period
		{"1600000 100000", 1600000, 100000, 16},
	} {
		q, err := parseCPUMax(tc.in)
		if err != nil {
			t.Errorf("parseCPUMax(%q): %v", tc.in, err)
			continue
		}
		if q.QuotaUs != tc.quota || q.PeriodUs != tc.per || q.Cores() != tc.cores {
			t.Errorf("parseCPUMax(%q) = %+v cores %d, want %d/%d cores %d", tc.in, q, q.Cores(), tc.quota, tc.per, tc.cores)
		}
	}
	for _, bad := range []string{"", "x 100000", "100000 0", "-5 100000", "1 2 3", "max abc"} {
		if _, err := parseCPUMax(bad); err == nil {
			t.Errorf("parseCPUMax(%q): no error", bad)
		}
	}
}

func TestParseCFS(t *testing.T) {
	q, err := parseCFS("-1\n", "100000\n")
	if err != nil || q.Limited() {
		t.Fatalf("unlimited: %+v %v", q, err)
	}
	q, err = parseCFS("250000\n", "100000\n")
	if err != nil || q.Cores() != 2 {
		t.Fatalf("2.5 cores: %+v %v", q, err)
	}
	if _, err := parseCFS("x", "100000"); err == nil {
		t.Fatal("bad quota accepted")
	}
}

// fakeFS serves fixture files; anything else does not exist.
type fakeFS map[string]string

func (f fakeFS) read(name string) ([]byte, error) {
	s, ok := f[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return []byte(s), nil
}

const (
	mountsV2 = `25 30 0:23 / /sys rw,nosuid - sysfs sysfs rw
35 25 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec - cgroup2 cgroup2 rw,nsdelegate
`
	mountsHybrid = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
)

func TestReadQuota(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files fakeFS
		want  Quota
	}{
		{
			name: "v2 limited, parent tighter",
			files: fakeFS{
				"/proc/self/cgroup":                              "0::/job.slice/streamd.scope\n",
				"/proc/self/mountinfo":                           mountsV2,
				"/sys/fs/cgroup/job.slice/streamd.scope/cpu.max": "max 100000\n",
				"/sys/fs/cgroup/job.slice/cpu.max":               "300000 100000\n",
			},
			want: Quota{300000, 100000, "/sys/fs/cgroup/job.slice/cpu.max", 2},
		},
		{
			name: "v2 child tighter",
			files: fakeFS{
				"/proc/self/cgroup":          "0::/a/b\n",
				"/proc/self/mountinfo":       mountsV2,
				"/sys/fs/cgroup/a/b/cpu.max": "150000 50000\n",
				"/sys/fs/cgroup/a/cpu.max":   "800000 100000\n",
			},
			want: Quota{150000, 50000, "/sys/fs/cgroup/a/b/cpu.max", 2},
		},
		{
			name: "v2 unlimited",
			files: fakeFS{
				"/proc/self/cgroup":        "0::/a\n",
				"/proc/self/mountinfo":     mountsV2,
				"/sys/fs/cgroup/a/cpu.max": "max 100000\n",
			},
			want: Quota{-1, 100000, "/sys/fs/cgroup/a/cpu.max", 2},
		},
		{
			name: "v2 in a cgroup namespace (container)",
			files: fakeFS{
				"/proc/self/cgroup":      "0::/\n",
				"/proc/self/mountinfo":   mountsV2,
				"/sys/fs/cgroup/cpu.max": "400000 100000\n",
			},
			want: Quota{400000, 100000, "/sys/fs/cgroup/cpu.max", 2},
		},
		{
			name: "v2 mount of a subtree",
			files: fakeFS{
				"/proc/self/cgroup":      "0::/docker/abc\n",
				"/proc/self/mountinfo":   "35 25 0:30 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
				"/sys/fs/cgroup/cpu.max": "200000 100000\n",
			},
			want: Quota{200000, 100000, "/sys/fs/cgroup/cpu.max", 2},
		},
		{
			name: "hybrid: v2 without cpu controller, v1 cfs",
			files: fakeFS{
				"/proc/self/cgroup":                      "4:memory:/x\n1:cpu:/x\n0::/\n",
				"/proc/self/mountinfo":                   mountsHybrid,
				"/sys/fs/cgroup/cpu/x/cpu.cfs_quota_us":  "250000\n",
				"/sys/fs/cgroup/cpu/x/cpu.cfs_period_us": "100000\n",
				"/sys/fs/cgroup/cpu/cpu.cfs_quota_us":    "-1\n",
				"/sys/fs/cgroup/cpu/cpu.cfs_period_us":   "100000\n",
			},
			want: Quota{250000, 100000, "/sys/fs/cgroup/cpu/x/cpu.cfs_quota_us", 1},
		},
		{
			name: "v1 unlimited (this build machine)",
			files: fakeFS{
				"/proc/self/cgroup":                    "2:cpuacct:/\n1:cpu:/\n0::/\n",
				"/proc/self/mountinfo":                 mountsHybrid,
				"/sys/fs/cgroup/cpu/cpu.cfs_quota_us":  "-1\n",
				"/sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n",
			},
			want: Quota{-1, 100000, "/sys/fs/cgroup/cpu/cpu.cfs_quota_us", 1},
		},
		{
			name: "no cgroup files",
			files: fakeFS{
				"/proc/self/cgroup":    "0::/\n",
				"/proc/self/mountinfo": mountsV2,
			},
			want: Quota{QuotaUs: -1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := readQuota(tc.files.read)
			if err != nil {
				t.Fatal(err)
			}
			if q != tc.want {
				t.Fatalf("got %+v, want %+v", q, tc.want)
			}
		})
	}
}

func TestReadQuotaErrors(t *testing.T) {
	if _, err := readQuota(fakeFS{}.read); err == nil {
		t.Fatal("missing /proc/self/cgroup: no error")
	}
	q, err := readQuota(fakeFS{
		"/proc/self/cgroup":      "0::/\n",
		"/proc/self/mountinfo":   mountsV2,
		"/sys/fs/cgroup/cpu.max": "garbage\n",
	}.read)
	if err == nil || q.Limited() || !strings.Contains(err.Error(), "cpu.max") {
		t.Fatalf("garbage cpu.max: %+v, %v", q, err)
	}
}

func TestUnescapeMount(t *testing.T) {
	if got := unescapeMount(`/a\040b\\`); got != `/a b\\` {
		t.Fatalf("got %q", got)
	}
}

func TestUsableAndString(t *testing.T) {
	aff := seq(16)
	c := CPUs{Affinity: aff, Quota: Quota{400000, 100000, "/sys/fs/cgroup/cpu.max", 2}}
	c.Usable = usable(c.Affinity, c.Quota)
	if !reflect.DeepEqual(c.Usable, []int{0, 1, 2, 3}) {
		t.Fatalf("usable = %v", c.Usable)
	}
	want := "cpus: affinity 0-15 (16), cgroup cpu.max 400000/100000 → 4 cores (/sys/fs/cgroup/cpu.max); usable 4 (0-3)"
	if s := c.String(); s != want {
		t.Fatalf("String:\n got %s\nwant %s", s, want)
	}
	if u := usable([]int{2, 5}, Quota{QuotaUs: -1}); !reflect.DeepEqual(u, []int{2, 5}) {
		t.Fatalf("unlimited usable = %v", u)
	}
	if u := usable([]int{2, 5}, Quota{QuotaUs: 10000, PeriodUs: 100000}); !reflect.DeepEqual(u, []int{2}) {
		t.Fatalf("0.1 core usable = %v", u)
	}
}

func TestFormatList(t *testing.T) {
	for in, want := range map[string]string{
		"":                "none",
		"0":               "0",
		"0,1":             "0-1",
		"0,1,2,3,8,10,11": "0-3,8,10-11",
	} {
		var ids []int
		for _, f := range strings.Split(in, ",") {
			if f != "" {
				var n int
				for _, ch := range f {
					n = n*10 + int(ch-'0')
				}
				ids = append(ids, n)
			}
		}
		if got := FormatList(ids); got != want {
			t.Errorf("FormatList(%v) = %q, want %q", ids, got, want)
		}
	}
}

func TestDetect(t *testing.T) {
	c := Detect()
	t.Log(c.String())
	if c.Cores() < 1 || c.Cores() > len(c.Affinity) {
		t.Fatalf("Cores %d with affinity %v", c.Cores(), c.Affinity)
	}
	if c.AffinityErr != nil {
		t.Fatalf("affinity: %v", c.AffinityErr)
	}
}

func TestMaxProcs(t *testing.T) {
	for _, tc := range []struct{ usable, pinned, want int }{
		{16, 8, 16}, {16, 16, 17}, {2, 1, 2}, {2, 2, 3}, {1, 0, 1}, {4, 0, 4},
	} {
		if got := MaxProcs(tc.usable, tc.pinned); got != tc.want {
			t.Errorf("MaxProcs(%d, %d) = %d, want %d", tc.usable, tc.pinned, got, tc.want)
		}
	}
}
