package main

import (
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"strings"
	"testing"

	"streamd/internal/tier"
)

// versionText writes each field of the build information, and "unknown"
// or "(devel)" where the binary carries none.
func TestVersionText(t *testing.T) {
	full := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "streamd", Version: "v1.2.0"},
		Settings: []debug.BuildSetting{
			{Key: "-buildmode", Value: "exe"}, {Key: "-compiler", Value: "gc"}, {Key: "-ldflags", Value: "-s -w"},
			{Key: "CGO_ENABLED", Value: "0"}, {Key: "GOARCH", Value: "arm64"}, {Key: "GOOS", Value: "darwin"},
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "3f1c0d2e9a0b"},
			{Key: "vcs.time", Value: "2026-12-01T17:04:11Z"}, {Key: "vcs.modified", Value: "true"},
		}}
	here := goruntime.GOOS + "/" + goruntime.GOARCH
	for _, c := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"full", full, "streamd v1.2.0\ncommit   3f1c0d2e9a0b+dirty\ntime     2026-12-01T17:04:11Z\ngo       go1.26.8\n" +
			"platform darwin/arm64\nflags    -buildmode=exe -compiler=gc -ldflags=\"-s -w\" CGO_ENABLED=0\n"},
		{"clean", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}},
			"streamd (devel)\ncommit   abc\ntime     unknown\ngo       go1.26.8\nplatform " + here + "\nflags    none\n"},
		{"go run", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "streamd"}},
			"streamd (devel)\ncommit   unknown\ntime     unknown\ngo       go1.26.8\nplatform " + here + "\nflags    none\n"},
		{"no build information", nil,
			"streamd (devel)\ncommit   unknown\ntime     unknown\ngo       " + goruntime.Version() + "\nplatform " + here + "\nflags    none\n"},
	} {
		if got := versionText(c.bi); got != c.want {
			t.Errorf("%s:\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
}

// streamd version and streamd --version print the running binary's own
// build information, the same text, on standard output.
func TestVersion(t *testing.T) {
	bi, _ := debug.ReadBuildInfo()
	want := versionText(bi)
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, stderr := cli(t, args...)
		if code != 0 || out != want || stderr != "" {
			t.Errorf("streamd %s: exit %d, stdout %q, stderr %q; want 0, %q", args[0], code, out, stderr, want)
		}
	}
	lines := strings.Split(want, "\n")
	if len(lines) != 7 || !strings.HasPrefix(lines[0], "streamd ") || lines[3] != "go       "+goruntime.Version() ||
		lines[4] != "platform "+goruntime.GOOS+"/"+goruntime.GOARCH {
		t.Errorf("version text:\n%s", want)
	}
	if code, _, stderr := cli(t, "version", "extra"); code != 2 || !strings.Contains(stderr, "unknown command \"extra\"") {
		t.Errorf("streamd version extra: exit %d, stderr %q; want 2", code, stderr)
	}
}

// A binary built by go build from a git clone names its commit, whether
// the tree had uncommitted changes, and the commit's time. (go build
// stamps no VCS information in a git worktree, whose .git is a file: the
// test is skipped there.)
func TestVersionOfBuiltBinary(t *testing.T) {
	tier.SkipUnlessLong(t) // a whole go build
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(root, ".git")); err != nil || !st.IsDir() {
		t.Skip("not a git clone (go build stamps VCS information only there)")
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", root}, args...)...)
		cmd.Env = append(os.Environ(), "TZ=UTC") // format-local: the commit time in UTC, as go build stamps it
		out, err := cmd.Output()
		if err != nil {
			t.Skipf("git %s: %v", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out))
	}
	commit := git("rev-parse", "HEAD")
	commitTime := git("show", "-s", "--format=%cd", "--date=format-local:%Y-%m-%dT%H:%M:%SZ", "HEAD")
	if git("status", "--porcelain") != "" {
		commit += "+dirty"
	}
	bin := filepath.Join(t.TempDir(), "streamd")
	build := exec.Command(filepath.Join(goruntime.GOROOT(), "bin", "go"), "build", "-buildvcs=true", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(out), "\n")
	if len(lines) < 6 || lines[1] != "commit   "+commit || lines[2] != "time     "+commitTime ||
		lines[3] != "go       "+goruntime.Version() || !strings.HasPrefix(lines[5], "flags    -buildmode=exe -compiler=gc ") {
		t.Errorf("streamd version:\n%s\nwant commit %s, time %s", out, commit, commitTime)
	}
}
