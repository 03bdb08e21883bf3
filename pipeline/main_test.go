package pipeline_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine is left running when
// they end: every goroutine the runtime starts must end with the run that
// started it (docs/runtime.md lists them and what ends each).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Keep-alive connections of the tests' own HTTP client.
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}
