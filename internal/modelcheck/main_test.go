package modelcheck

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine is left running when
// they end: every explored thread ends with its execution.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
