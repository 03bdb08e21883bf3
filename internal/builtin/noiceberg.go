//go:build noiceberg

package builtin

import "github.com/weir-etl/weir/connector"

// A configuration that names the iceberg sink in this build is told why it
// is missing, and how to get it.
func init() {
	connector.LeaveOut("sink", "iceberg", "it was built with -tags noiceberg; build weir without that tag (go build ./cmd/weir) for the iceberg sink")
}
