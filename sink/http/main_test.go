package http_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine is left running when
// they end: every request's goroutine ends with its group, and Close closes
// the client's connections. The test receivers (httptest) are closed by
// their tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
