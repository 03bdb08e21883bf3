package kafka

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine is left running when
// they end: a transactional group's pump ends with the group, and Close closes the client.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
