package record

import (
	"testing"
	"unsafe"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/internal/recordack"
)

// Guarantee: the runtime's accessor (internal/recordack) reaches the
// record's own reference, and CloneData leaves it behind: a copy that kept
// it would release the batch twice.
func TestAckAccessorAndCloneData(t *testing.T) {
	cp := checkpoint.New()
	iss := cp.NewIssuer()
	iss.Assign(0, 0)
	ref := iss.Issue(0, 10)
	refOf := func(r *Record) *checkpoint.AckRef { return recordack.Ref(unsafe.Pointer(r)) }
	r := New([]byte(`{"a":1}`))
	if refOf(&r) != &r.ack {
		t.Fatal("the accessor does not point at the record's reference")
	}
	*refOf(&r) = ref
	if r.ack != ref {
		t.Fatal("the accessor does not reach the record's reference")
	}
	c := r.CloneData()
	if !refOf(&c).IsZero() {
		t.Fatal("CloneData kept the reference")
	}
	if *refOf(&r) != ref {
		t.Fatal("CloneData took the original's reference")
	}
	ref.Release(checkpoint.Delivered)
}
