package jsonlsink_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine is left running when
// they end: the conformance suite's runtime ends with each run.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
