package pipeline

import (
	"slices"
	"sync/atomic"

	"github.com/weir-etl/weir/checkpoint"
)

// heldLists are the batches a sink's current group holds references of, and
// those of its groups at the persister, for the stall explainer and the
// status. Only the sink goroutine writes them; the checkpointer goroutines
// read them (batches), without a lock.
type heldLists struct {
	cur    atomic.Pointer[heldBuf]
	sealed atomic.Pointer[[]*heldBuf] // never changed once published
	size   int                        // the length of the last group's list, for the next one's; the sink goroutine's
}

// heldBuf is one group's list. The sink goroutine appends and publishes each
// append through n; an element, once published, is never written again (the
// next group gets a new heldBuf, and a full one is copied into a larger
// one), so other goroutines read ids[:n] without a lock.
type heldBuf struct {
	ids []checkpoint.BatchID // its length is the capacity: ids[:n] are set
	n   atomic.Int64
}

// list returns the batches in b (none for nil).
func (b *heldBuf) list() []checkpoint.BatchID {
	if b == nil {
		return nil
	}
	return b.ids[:b.n.Load()]
}

// batches appends every batch held to dst, each once. The sealed lists are
// read before the current one: a group's list goes from current to sealed
// (drop, then sealedGroup), never back, so read in this order it is seen
// once or, in the instant between the two, not at all; read the other way
// round, a group sealed between the two loads would be listed twice.
func (h *heldLists) batches(dst []checkpoint.BatchID) []checkpoint.BatchID {
	if sl := h.sealed.Load(); sl != nil {
		for _, b := range *sl {
			dst = append(dst, b.list()...)
		}
	}
	return append(dst, h.cur.Load().list()...)
}

// note adds id to the current group's list.
func (h *heldLists) note(id checkpoint.BatchID) {
	b := h.cur.Load()
	var n int
	if b != nil {
		n = int(b.n.Load())
	}
	if b == nil || n == len(b.ids) {
		nb := &heldBuf{ids: make([]checkpoint.BatchID, max(2*n, h.size, 8))}
		if b != nil {
			copy(nb.ids, b.ids)
		}
		nb.n.Store(int64(n))
		h.cur.Store(nb)
		b = nb
	}
	b.ids[n] = id
	b.n.Store(int64(n + 1))
}

// drop empties the current group's list, and returns what it was.
func (h *heldLists) drop() *heldBuf {
	b := h.cur.Swap(nil)
	if b != nil {
		h.size = int(b.n.Load())
	}
	return b
}

// sealedGroup adds b, the list of a group going to the persister.
func (h *heldLists) sealedGroup(b *heldBuf) {
	if b != nil {
		h.setSealed(func(l []*heldBuf) []*heldBuf { return append(l, b) })
	}
}

// returned removes b, the list of a group back from the persister.
func (h *heldLists) returned(b *heldBuf) {
	if b != nil {
		h.setSealed(func(l []*heldBuf) []*heldBuf {
			if i := slices.Index(l, b); i >= 0 {
				l = slices.Delete(l, i, i+1)
			}
			return l
		})
	}
}

func (h *heldLists) setSealed(f func([]*heldBuf) []*heldBuf) {
	var l []*heldBuf
	if p := h.sealed.Load(); p != nil {
		l = slices.Clone(*p)
	}
	l = f(l)
	h.sealed.Store(&l)
}
