package lang

import (
	"testing"
	"unsafe"

	"github.com/weir-etl/weir/internal/cacheline"
)

// TestEnvIsPadded checks that an Env, written for every record by the
// worker that holds it, lies at least cacheline.Size from both ends of its
// allocation, off the lines of any other worker's (internal/cacheline).
func TestEnvIsPadded(t *testing.T) {
	var e Env
	if off := unsafe.Offsetof(e.f); off < cacheline.Size {
		t.Errorf("an Env's first field is %d bytes from its start, want at least %d", off, cacheline.Size)
	}
	end := unsafe.Offsetof(e.now) + unsafe.Sizeof(e.now)
	if tail := unsafe.Sizeof(e) - end; tail < cacheline.Size {
		t.Errorf("an Env's last field ends %d bytes before its end, want at least %d", tail, cacheline.Size)
	}
}
