package checkpoint

import "runtime"

// slabSize is how many batches share one allocation of handles and nodes.
const slabSize = 64

// Batch state is allocated in slabs, which is how issuing stays well under one
// allocation per batch while still having a backstop for leaked references.
//
// Records point at handles; handles point at nodes; nodes never point back.
// A cleanup (runtime.AddCleanup) is attached to each handle slab with its node
// slab as the argument. When no handle of a slab is reachable any more, nobody
// can release those batches again, and the cleanup resolves every batch of the
// slab that was issued but never resolved as Failed and leaked. A leaked
// reference therefore can neither hang a partition forever nor ever be taken
// for a delivery. The price is latency: a leak is noticed once the whole slab
// (slabSize consecutive batches of one issuer) is unreachable, after a GC.
type handleSlab struct {
	h [slabSize]handle
}

type nodeSlab struct {
	n [slabSize]node
}

// newSlabs allocates a slab pair whose nodes resolve into q.
func newSlabs(q *queue) (*handleSlab, *nodeSlab) {
	hs := new(handleSlab)
	ns := new(nodeSlab)
	for i := range ns.n {
		ns.n[i].q = q
		hs.h[i].n = &ns.n[i]
	}
	runtime.AddCleanup(hs, resolveLeakedHook, ns) // resolveLeaked; see seeded_on.go for the modelcheck build
	return hs, ns
}

// resolveLeaked is the backstop run after a handle slab became unreachable.
func resolveLeaked(ns *nodeSlab) {
	for i := range ns.n {
		n := &ns.n[i]
		if n.state.Load() != statePending {
			continue // never issued, or resolved by a release
		}
		n.leaked = true
		n.state.Store(stateResolved + uint32(Failed))
		n.q.push(n)
	}
}
