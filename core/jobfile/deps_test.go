package jobfile

import (
	"strings"
	"testing"

	"streamd/internal/deps"
)

// The loader produces a plain job description (core/plan) and does not
// import the runtime: neither core/runtime nor any package under it.
func TestNoRuntime(t *testing.T) {
	ds, err := deps.Of(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if d == "streamd/core/runtime" || strings.HasPrefix(d, "streamd/core/runtime/") {
			t.Errorf("core/jobfile depends on %s", d)
		}
	}
}
