package pipeline

import (
	"unsafe"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/internal/recordack"
	"github.com/weir-etl/weir/record"
)

// refOf returns a pointer to r's acknowledgement reference, which record
// keeps unexported so that only the runtime sets, clones and releases it
// (internal/recordack). It is inlined and allocates nothing.
func refOf(r *record.Record) *checkpoint.AckRef { return recordack.Ref(unsafe.Pointer(r)) }
