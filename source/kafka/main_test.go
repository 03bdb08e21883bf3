package kafka

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine is left running when
// they end: the client's fetch loop ends at Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
