package cli

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine is left running when
// they end: every command ends what it started: the pipeline, the file watcher of --watch, the tap's reader.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
