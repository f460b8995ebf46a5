// Package scripttest runs a package's script tests: the files under a
// directory (its testdata, as a rule), each a cockroachdb/datadriven script (a command per
// line, the expected output beneath; -rewrite regenerates the expectations
// after a deliberate change).
package scripttest

import (
	"testing"

	"github.com/cockroachdb/datadriven"
)

// Walk calls f once per script under dir, subdirectories included (hidden
// and editor temp files are skipped), each in a subtest named for the file
// without its extension: datadriven.Walk. A directory that is missing or
// holds no script fails the test: a script test that runs nothing must not
// pass.
func Walk(t *testing.T, dir string, f func(t *testing.T, path string)) {
	t.Helper()
	n := 0
	datadriven.Walk(t, dir, func(t *testing.T, path string) {
		n++
		f(t, path)
	})
	if n == 0 {
		t.Fatalf("no scripts in %s", dir)
	}
}
