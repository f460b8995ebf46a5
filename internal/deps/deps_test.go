package deps

import (
	"slices"
	"testing"
)

// Of follows the module's own packages and lists the rest: this package
// imports go/build directly; core/plan reaches core through its imports
// and kvstate's.
func TestOf(t *testing.T) {
	got, err := Of(".")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got, "go/build") || slices.Contains(got, "testing") {
		t.Fatalf("deps of internal/deps: %v", got)
	}
	got, err = Of("../../core/plan")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"streamd/core", "streamd/kvstate", "streamd/snapshot"} {
		if !slices.Contains(got, want) {
			t.Fatalf("deps of core/plan lack %s: %v", want, got)
		}
	}
}
