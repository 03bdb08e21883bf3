package pipeline

import (
	"testing"
	"unsafe"

	"github.com/weir-etl/weir/internal/cacheline"
)

// TestWorkerStateIsPadded checks that what a worker writes for every record
// lies at least cacheline.Size from both ends of its allocation, and so
// off the lines of any other worker (internal/cacheline).
func TestWorkerStateIsPadded(t *testing.T) {
	var w worker
	if off := unsafe.Offsetof(w.rt); off < cacheline.Size {
		t.Errorf("a worker's first field is %d bytes from its start, want at least %d", off, cacheline.Size)
	}
	end := unsafe.Offsetof(w.eval) + unsafe.Sizeof(w.eval)
	if tail := unsafe.Sizeof(w) - end; tail < cacheline.Size {
		t.Errorf("a worker's eval ends %d bytes before its end, want at least %d", tail, cacheline.Size)
	}
}
