package pipeline

import (
	"context"
	"slices"
	"sync/atomic"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/pipeline/internal/policy"
)

// What crosses between a source's poller and its checkpointer goroutine,
// besides the in-flight counts (atomics) and the Host's requests (reqs):
// the batches issued, one way, and the rewind requests, the other.

// maxIssuedBuffer bounds the issued channel. Its batches are in flight, so a
// channel of MaxInFlightBatches never blocks the poller; past this bound a
// full channel wakes the checkpointer goroutine and waits for it (send).
const maxIssuedBuffer = 4096

// issuedBatch is what the poller tells the checkpointer goroutine of a batch
// it issued.
type issuedBatch struct {
	id checkpoint.BatchID
	batchInfo
}

// issuedQueue carries the batches the poller issued to the checkpointer
// goroutine, which moves them into its table.
type issuedQueue struct{ ch chan issuedBatch }

// send is the poller's: ib goes out before any reference of the batch can be
// released. A full channel wakes the checkpointer goroutine (wake), which
// takes the batches when it steps.
func (q issuedQueue) send(ib issuedBatch, wake chan struct{}) {
	select {
	case q.ch <- ib:
	default:
		signal(wake)
		q.ch <- ib
	}
}

// takeInto moves every batch sent so far into table, until it took until (a
// zero until: all of them). It reports whether it took until. The
// checkpointer goroutine's.
func (q issuedQueue) takeInto(table map[checkpoint.BatchID]batchInfo, until checkpoint.BatchID) bool {
	for {
		select {
		case ib := <-q.ch:
			table[ib.id] = ib.batchInfo
			if ib.id == until {
				return true
			}
		default:
			return false
		}
	}
}

// rewindBox carries rewind requests from the checkpointer goroutine to the
// poller. A request is pushed on a list (only the checkpointer goroutine
// pushes, only the poller takes), then cancels the context of the Poll in
// progress through cancel: a Poll blocked on an idle partition would
// otherwise hold the rewind until new data arrived. The poller stores a
// fresh cancel before it takes the requests, so that a request pushed after
// the take cancels the new context; sig then wakes a poller that waits.
type rewindBox struct {
	head   atomic.Pointer[rewindNode]
	cancel atomic.Pointer[context.CancelCauseFunc] // written by the poller, called by the checkpointer goroutine
	sig    chan struct{}                           // capacity 1
}

type rewindNode struct {
	rs   []policy.Rewind
	next *rewindNode
}

// request is the checkpointer goroutine's.
func (b *rewindBox) request(rs []policy.Rewind) {
	n := &rewindNode{rs: slices.Clone(rs)}
	for {
		n.next = b.head.Load()
		if b.head.CompareAndSwap(n.next, n) {
			break
		}
	}
	if c := b.cancel.Load(); c != nil {
		(*c)(errRewind)
	}
	signal(b.sig)
}

// newContext gives the poller's next Polls a context of their own, derived
// from pollCtx, which a request cancels. The poller's.
func (b *rewindBox) newContext(pollCtx context.Context) context.Context {
	ctx, cancel := context.WithCancelCause(pollCtx)
	b.cancel.Store(&cancel)
	return ctx
}

// stop cancels the Polls' context for good, when the poller returns.
func (b *rewindBox) stop() {
	if c := b.cancel.Load(); c != nil {
		(*c)(nil)
	}
}

// take returns every request pushed so far, in the order pushed. The
// poller's.
func (b *rewindBox) take() []policy.Rewind {
	var nodes []*rewindNode
	for n := b.head.Swap(nil); n != nil; n = n.next {
		nodes = append(nodes, n)
	}
	var out []policy.Rewind
	for i := len(nodes) - 1; i >= 0; i-- {
		out = append(out, nodes[i].rs...)
	}
	return out
}
