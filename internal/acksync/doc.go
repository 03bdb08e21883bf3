// Package acksync holds every shared-memory operation of weir's acknowledgement
// path: the atomics that AckRef, AckSet and the Checkpointer's queue use, and the
// wake channel that rouses the checkpointer goroutine.
//
// Keeping them behind this one small package is what makes the ack path
// model-checkable. In a normal build each type is a zero-cost wrapper over
// sync/atomic and a capacity-1 channel. Built with the modelcheck tag, the same
// API yields to a deterministic scheduler before every operation, so a test can
// explore every interleaving of the real checkpoint code (see internal/modelcheck).
//
// Nothing outside the ack path should use this package: it is not a general
// atomics library, and each operation here is a scheduling point under the tag.
package acksync
