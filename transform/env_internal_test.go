package transform

import (
	"testing"

	"github.com/weir-etl/weir/internal/cacheline"
)

// TestEnvIsPadded checks that an env, written for every record by the
// worker that holds it, lies off any other worker's cache lines
// (internal/cacheline).
func TestEnvIsPadded(t *testing.T) {
	if err := cacheline.CheckPadded(env{}); err != nil {
		t.Error(err)
	}
}
