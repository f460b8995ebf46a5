package scripttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEmptyFails: a testdata directory that holds no script (here only a
// hidden file) fails the test. The failing run is this test binary run
// again, in a directory prepared for it, so that its failure is observed
// rather than suffered.
func TestEmptyFails(t *testing.T) {
	if os.Getenv("SCRIPTTEST_EMPTY") == "1" {
		Walk(t, "testdata", func(t *testing.T, path string) { t.Errorf("ran %s", path) })
		return
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "testdata"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "testdata", ".hidden"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestEmptyFails$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SCRIPTTEST_EMPTY=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("an empty testdata passed:\n%s", out)
	}
	if !strings.Contains(string(out), "no scripts in testdata") {
		t.Fatalf("want %q, got:\n%s", "no scripts in testdata", out)
	}
}
