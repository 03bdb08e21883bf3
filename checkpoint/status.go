package checkpoint

import (
	"fmt"
	"math/bits"
)

// AckStatus is the resolution status of a batch. The statuses form a worst-of
// lattice, Delivered < Failed < Rejected: a batch resolves with the worst status
// any of its records was released with, so once any record of a batch fails the
// batch is failed, whatever the other records did.
type AckStatus uint8

const (
	// Delivered means the record was durably written by every sink it was
	// routed to, or deliberately dropped (a filter, a route that matched
	// nothing). It is the bottom of the lattice.
	Delivered AckStatus = iota
	// Failed means a write failed in a way that replaying may fix (a timeout, a
	// broker that went away). The watermark stops before the batch.
	Failed
	// Rejected means the record can never be written as it is (it does not
	// decode, a sink refuses it). Replaying will not help; the failure policy
	// decides what happens to it. The watermark stops before the batch.
	Rejected

	numStatuses = iota
)

// Merge returns the worse of s and o.
func (s AckStatus) Merge(o AckStatus) AckStatus { return max(s, o) }

// Valid reports whether s is one of the defined statuses.
func (s AckStatus) Valid() bool { return s < numStatuses }

// String returns "delivered", "failed" or "rejected".
func (s AckStatus) String() string {
	switch s {
	case Delivered:
		return "delivered"
	case Failed:
		return "failed"
	case Rejected:
		return "rejected"
	}
	return fmt.Sprintf("AckStatus(%d)", uint8(s))
}

// mask encodes s for the ack path's status word. Delivered is the empty mask,
// so releasing as delivered needs no write at all; every other status sets one
// bit, so merging concurrent releases is a single atomic OR, and the worst status
// seen is the highest bit set.
func (s AckStatus) mask() uint32 {
	if s == Delivered {
		return 0
	}
	return 1 << (s - 1)
}

// statusOfMask decodes a status word written by mask.
func statusOfMask(m uint32) AckStatus { return AckStatus(bits.Len32(m)) }
