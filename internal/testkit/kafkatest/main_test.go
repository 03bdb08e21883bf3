package kafkatest

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine is left running when
// they end: the proxy's connections and the host's pollers end when their test closes them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
