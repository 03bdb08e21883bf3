package pgcdc

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine is left running when
// they end: the replication stream's goroutine ends at Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
