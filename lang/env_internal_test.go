package lang

import (
	"testing"

	"github.com/weir-etl/weir/internal/cacheline"
)

// TestEnvIsPadded checks that an Env, written for every record by the
// worker that holds it, lies off any other worker's cache lines
// (internal/cacheline).
func TestEnvIsPadded(t *testing.T) {
	if err := cacheline.CheckPadded(Env{}); err != nil {
		t.Error(err)
	}
}
