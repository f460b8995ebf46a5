package source

import (
	"os"
	"path/filepath"
	"testing"
)

// dataFile returns the path of a shared test data file (README in
// shared/data). It walks up from the test's working directory looking for
// a shared/data folder, which sits beside the repository root (CI clones
// the repository with ../shared beside it). A missing file fails the test:
// the data is part of the test set, never optional.
func dataFile(t testing.TB, name string) string {
	t.Helper()
	if d := os.Getenv("STREAMD_DATA"); d != "" {
		return filepath.Join(d, name)
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		p := filepath.Join(dir, "shared", "data", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("test data %s not found: no shared/data/%s in any folder above the working directory (shared/ must sit beside the repository)", name, name)
		}
		dir = parent
	}
}
