package checkpoint

import (
	"fmt"

	"github.com/weir-etl/weir/internal/acksync"
)

// AckRef is a counted reference to one batch's acknowledgement state. Every
// record derived from a source poll batch carries one; the batch resolves when
// the last one is released.
//
// An AckRef is a single pointer. Clone costs one atomic increment and allocates
// nothing (CloneN adds n references in one); Release costs one atomic
// decrement, plus one atomic OR when the status is not Delivered. Neither ever
// blocks.
//
// Each reference must be released exactly once. Release clears the variable it
// is called on, so releasing or cloning it again panics; releasing a copy of a
// released reference is caught when the count would go below zero, and cloning a
// reference of a resolved batch panics. A reference that is dropped without a
// release is not silently lost: when no reference of its batch is reachable any
// more, the batch resolves as Failed and is counted as leaked (DrainStats.Leaked).
type AckRef struct {
	h *handle
}

// handle is the shared, counted part of a batch. Handles live in slabs (see
// slab.go) padded to a cache line each, so batches in flight on different cores
// do not share lines.
type handle struct {
	refs   acksync.Int64  // outstanding references
	status acksync.Uint32 // OR of AckStatus.mask of every release
	n      *node          // where the resolution is written
	_      [40]byte
}

// Clone returns a new reference to the same batch. The batch cannot resolve
// until both are released.
func (r AckRef) Clone() AckRef {
	if r.h == nil {
		panic("checkpoint: Clone of a zero or released AckRef")
	}
	if r.h.refs.Add(1) <= 1 {
		panic(fmt.Sprintf("checkpoint: Clone of an AckRef whose batch %v already resolved", r.h.n.id))
	}
	return r
}

// CloneN adds n references to r's batch in one atomic step, as n calls of
// Clone would, and returns r for them: the caller stores the result in n
// places (the records of a poll batch), and each stored copy is a reference
// of its own, released once. It is what handing a batch's reference to each
// of its records costs: one atomic add for the batch instead of one a record.
// r itself stays a reference too. CloneN panics when n < 1, or when r is zero,
// released or of a resolved batch.
func (r AckRef) CloneN(n int) AckRef {
	if n < 1 {
		panic(fmt.Sprintf("checkpoint: CloneN of %d references", n))
	}
	if r.h == nil {
		panic("checkpoint: CloneN of a zero or released AckRef")
	}
	if r.h.refs.Add(int64(n)) <= int64(n) {
		panic(fmt.Sprintf("checkpoint: CloneN of an AckRef whose batch %v already resolved", r.h.n.id))
	}
	return r
}

// Release gives up this reference with status s (Delivered for a record written
// or deliberately dropped). The release that drops the batch's count to zero
// resolves it with the worst status any release carried, and queues its AckMsg
// for the Checkpointer. Release clears r.
func (r *AckRef) Release(s AckStatus) {
	h := r.h
	if h == nil {
		panic("checkpoint: Release of a zero or already released AckRef")
	}
	if !s.Valid() {
		panic(fmt.Sprintf("checkpoint: Release with invalid status %d", uint8(s)))
	}
	r.h = nil
	h.release(s, 1)
}

// IsZero reports whether r holds no reference (never issued, or released).
func (r AckRef) IsZero() bool { return r.h == nil }

// Batch returns the identity of the batch r refers to.
func (r AckRef) Batch() BatchID {
	if r.h == nil {
		panic("checkpoint: Batch of a zero or released AckRef")
	}
	return r.h.n.id
}

// release drops n references with status s.
//
// The OR must come before the decrement: the release that reaches zero reads
// the status word after its own decrement, and every other release's merge is
// then already visible, because each of them happened before its decrement.
func (h *handle) release(s AckStatus, n int64) {
	if seededRelease(h, s, n) { // a wrong variant, modelcheck build only (seeded_on.go)
		return
	}
	if m := s.mask(); m != 0 {
		h.status.Or(m)
	}
	left := h.refs.Add(-n)
	if left > 0 {
		return
	}
	if left < 0 {
		panic(fmt.Sprintf("checkpoint: batch %v released more times than it was cloned", h.n.id))
	}
	nd := h.n
	nd.state.Store(stateResolved + uint32(statusOfMask(h.status.Load())))
	nd.q.push(nd)
}
