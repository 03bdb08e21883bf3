package s3

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine is left running when
// they end: a multipart upload's part uploads end with its group.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
