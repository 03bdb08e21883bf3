package checkpoint

import "github.com/weir-etl/weir/internal/acksync"

// nodeKind says what a queue node carries.
type nodeKind uint8

const (
	kindBatch  nodeKind = iota // a resolved (or leaked) batch
	kindAssign                 // a partition assigned under a new epoch
	kindRevoke                 // no more batches will be issued in an epoch
)

// Values of node.state for batch nodes. A batch node moves from unissued to
// pending when the issuer hands out its AckRef, and to resolved+status exactly
// once: by the release that drops its count to zero, or by the leak backstop.
const (
	stateUnissued uint32 = iota
	statePending
	stateResolved // stateResolved + uint32(status)
)

// node is one entry of the Checkpointer's queue. A batch's node is its
// resolution state, allocated with the batch (in a slab) and pushed exactly once,
// so resolving a batch allocates nothing. Control nodes (assign, revoke) are
// allocated one each; they are rare.
type node struct {
	next  acksync.Pointer[node]
	state acksync.Uint32 // batch nodes: see stateUnissued; written before push
	kind  nodeKind

	leaked bool // set by the leak backstop before push
	id     BatchID
	pos    Position // batch: end position; assign: start position
	issued uint64   // revoke: batches issued in the epoch
	q      *queue   // where the node goes when it resolves
}

// queue is an intrusive multi-producer single-consumer queue (D. Vyukov's
// design). push is two atomic operations and never waits, whatever the consumer
// does; pop is for the one goroutine that owns the Checkpointer.
//
// The one subtle point: push swaps the tail first and links the previous tail to
// the new node second. Between the two the chain is broken, and pop returns nil
// even though a node is on its way. That is safe because the producer signals the
// wake channel only after linking: a consumer that saw the break and goes to wait
// is woken by that signal and finds the node linked.
type queue struct {
	head *node                 // consumer only
	tail acksync.Pointer[node] // most recently pushed node
	stub node
	wake *acksync.Wake
}

func newQueue() *queue {
	q := &queue{wake: acksync.NewWake()}
	q.head = &q.stub
	q.tail.Store(&q.stub)
	return q
}

// push appends n and wakes the consumer. It never blocks.
func (q *queue) push(n *node) {
	if seededPush(q, n) { // a wrong variant, modelcheck build only (seeded_on.go)
		return
	}
	q.link(n)
	q.wake.Signal()
}

func (q *queue) link(n *node) {
	n.next.Store(nil)
	prev := q.tail.Swap(n)
	prev.next.Store(n)
}

// pop removes and returns the oldest node, or nil when the queue is empty or a
// push is half done (its producer will signal the wake channel when it is not).
func (q *queue) pop() *node {
	head := q.head
	next := head.next.Load()
	if head == &q.stub {
		if next == nil {
			return nil
		}
		q.head = next
		head = next
		next = next.next.Load()
	}
	if next != nil {
		q.head = next
		return head
	}
	if head != q.tail.Load() {
		return nil // a producer swapped the tail but has not linked yet
	}
	// head is the last node: put the stub behind it so head can be handed out
	// while the queue keeps a node to hang future pushes on.
	q.link(&q.stub)
	next = head.next.Load()
	if next != nil {
		q.head = next
		return head
	}
	return nil // a producer got in between; its node is next time's
}
