package fleet

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine is left running when
// they end: every pipeline a fleet starts, and its API server, end with it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
