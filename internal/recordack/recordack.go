// Package recordack is the one way to a record's acknowledgement reference.
// record.Record keeps its checkpoint.AckRef in an unexported field, so that
// transforms and connectors cannot take, copy or release it; package record
// tells this package where the field lies when it is initialised, and the
// runtime (package pipeline) reaches it from here. No other package may
// import this one (TestOnlyTheRuntimeImportsIt).
//
// It is an offset rather than a function value on purpose: the runtime
// reaches the reference of every record, often of a local copy, and a call
// through a function value makes each such copy escape to the heap (an
// allocation per record). The accessor built on the offset is inlined and
// allocates nothing.
package recordack

import (
	"unsafe"

	"github.com/weir-etl/weir/checkpoint"
)

var offset uintptr

// Install is called by package record, once, with
// unsafe.Offsetof(Record{}.ack).
func Install(off uintptr) { offset = off }

// Ref returns the reference of the record at r, a *record.Record. It panics
// if package record did not install its offset (it is never the first
// field).
func Ref(r unsafe.Pointer) *checkpoint.AckRef {
	if offset == 0 {
		panic("recordack: package record did not install the offset of its reference")
	}
	return (*checkpoint.AckRef)(unsafe.Add(r, offset))
}
