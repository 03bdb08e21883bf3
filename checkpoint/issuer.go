package checkpoint

import (
	"fmt"
	"sync/atomic"
)

// AckIssuer creates acknowledgement handles on a source's polling goroutine. It
// knows the current epoch of each partition it owns and numbers the batches of
// that epoch; issuing touches only the issuer's own memory and the new batch's,
// with no lock and no channel.
//
// An AckIssuer is not safe for concurrent use: it belongs to one polling
// goroutine. A Checkpointer may have several issuers as long as each partition
// is owned by one of them at a time.
type AckIssuer struct {
	q      *queue
	epochs *atomic.Uint64 // the Checkpointer's epoch counter
	parts  []issuerPart   // indexed by Partition

	hs   *handleSlab // current slab; nil when used up
	ns   *nodeSlab
	slot int
}

type issuerPart struct {
	epoch Epoch // 0 when not assigned
	seq   uint64
	last  Position
}

// Assign starts a new epoch for p whose first batch begins at start, and returns
// it. Call it when a partition is assigned, and again to rewind: after seeking
// the source back to the watermark, Assign(p, watermark) makes every reference
// still in flight from the old epoch stale. Any earlier epoch of p ends.
func (i *AckIssuer) Assign(p Partition, start Position) Epoch {
	ip := i.part(p)
	e := Epoch(i.epochs.Add(1))
	*ip = issuerPart{epoch: e, last: start}
	i.q.push(&node{kind: kindAssign, id: BatchID{Partition: p, Epoch: e}, pos: start})
	return e
}

// Revoke ends issuing for p's current epoch: no batch will follow. The
// Checkpointer keeps applying the epoch's resolutions that are still in flight,
// so the caller can wait for them (Checkpointer.Drained) and commit the final
// watermark, then call Checkpointer.Forget. Revoke of a partition that is not
// assigned does nothing.
func (i *AckIssuer) Revoke(p Partition) {
	if int(p) >= len(i.parts) || i.parts[p].epoch == 0 {
		return
	}
	ip := &i.parts[p]
	i.q.push(&node{kind: kindRevoke, id: BatchID{Partition: p, Epoch: ip.epoch}, issued: ip.seq})
	*ip = issuerPart{}
}

// Epoch returns p's current epoch, or 0 when p is not assigned.
func (i *AckIssuer) Epoch(p Partition) Epoch {
	if int(p) >= len(i.parts) {
		return 0
	}
	return i.parts[p].epoch
}

// Issue returns the reference for a new batch of p that ends at position end:
// once this batch and every earlier batch of the epoch are delivered, end is
// committable. The reference is the batch's first; clone it into each record.
// A batch with no records is fine: release the reference as Delivered.
//
// Issue panics when p is not assigned or end is before the previous batch's end:
// both are bugs in the source.
func (i *AckIssuer) Issue(p Partition, end Position) AckRef {
	if int(p) >= len(i.parts) || i.parts[p].epoch == 0 {
		panic(fmt.Sprintf("checkpoint: Issue on partition %d, which is not assigned", p))
	}
	ip := &i.parts[p]
	if end < ip.last {
		panic(fmt.Sprintf("checkpoint: Issue on partition %d at position %d, before the previous batch's end %d", p, end, ip.last))
	}
	if i.hs == nil {
		i.hs, i.ns = newSlabs(i.q)
		i.slot = 0
	}
	h := &i.hs.h[i.slot]
	n := &i.ns.n[i.slot]
	if i.slot++; i.slot == slabSize {
		i.hs, i.ns = nil, nil
	}
	n.id = BatchID{Partition: p, Epoch: ip.epoch, Seq: ip.seq}
	n.pos = end
	ip.seq++
	ip.last = end
	h.refs.Store(1)
	n.state.Store(statePending)
	return AckRef{h: h}
}

func (i *AckIssuer) part(p Partition) *issuerPart {
	if int(p) >= len(i.parts) {
		i.parts = append(i.parts, make([]issuerPart, int(p)+1-len(i.parts))...)
	}
	return &i.parts[p]
}
