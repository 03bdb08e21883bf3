package iceberg

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine is left running when
// they end: the conformance suite's runtime ends with each run, and Close
// ends the catalog's and the storage's clients. The one exception is an
// idle keep-alive connection of a shared HTTP transport (the REST catalog's
// and the S3 client's, under the integration tag): a pool's connection
// waiting for reuse, which the transport closes when idle, not a goroutine
// the sink started.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"))
}
