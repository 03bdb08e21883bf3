package pipeline

import (
	"testing"

	"github.com/weir-etl/weir/internal/cacheline"
)

// TestWorkerStateIsPadded checks that what a worker writes for every record
// lies off any other worker's cache lines (internal/cacheline).
func TestWorkerStateIsPadded(t *testing.T) {
	if err := cacheline.CheckPadded(worker{}); err != nil {
		t.Error(err)
	}
}
