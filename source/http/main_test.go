package http_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine is left running when
// they end: Close must end the accept loop and every handler. The tests'
// own clients close their idle connections; nothing of net/http's server
// side is ignored.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
