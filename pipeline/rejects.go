package pipeline

import (
	"sync/atomic"

	"github.com/weir-etl/weir/checkpoint"
)

// rejectList keeps the first rejection of each batch, up to maxRejections
// batches, in a list that only grows: any worker pushes (a compare and
// swap on head), the checkpointer goroutines read.
type rejectList struct {
	head atomic.Pointer[rejectNode]
	n    atomic.Int64
}

type rejectNode struct {
	r    *rejection
	next *rejectNode
}

// maxRejections bounds the batches whose rejection is kept.
const maxRejections = 1024

func (l *rejectList) find(id checkpoint.BatchID, n *rejectNode) *rejection {
	var first *rejection
	for ; n != nil; n = n.next {
		if n.r.batch == id {
			first = n.r // the list is newest first: the last match is the first noted
		}
	}
	return first
}

func (rt *runtime) noteReject(r *rejection) {
	l := &rt.rejects
	if l.n.Load() >= maxRejections {
		return
	}
	n := &rejectNode{r: r}
	for {
		n.next = l.head.Load()
		if l.find(r.batch, n.next) != nil {
			return
		}
		if l.head.CompareAndSwap(n.next, n) {
			l.n.Add(1)
			return
		}
	}
}
func (rt *runtime) rejection(id checkpoint.BatchID) *rejection {
	return rt.rejects.find(id, rt.rejects.head.Load())
}
