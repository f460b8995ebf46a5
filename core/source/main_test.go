package source

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind (Stdin's reader
// goroutine must stop on Close).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
