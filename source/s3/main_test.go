package s3

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine is left running when
// they end: the listing and download ahead of Poll end at Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
