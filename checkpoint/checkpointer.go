package checkpoint

import (
	"fmt"
	"sync/atomic"
)

// Checkpointer aggregates batch resolutions into per-partition committable
// watermarks. One goroutine owns it: that goroutine calls every method except
// NewIssuer and Wake, which are safe anywhere. Resolutions reach it through a
// queue that releases push to with atomics only; the owner wakes on Wake,
// calls Drain, and on its commit interval hands Committable to the source.
//
// The Checkpointer is synchronous: it has no goroutines, locks, clocks or I/O
// of its own. Time and events enter as calls. Its one channel is the wake
// channel, of capacity 1, which producers signal without blocking and only the
// owner receives from.
type Checkpointer struct {
	q      *queue
	epochs atomic.Uint64 // last epoch handed out by any issuer
	parts  []cpPart      // indexed by Partition
}

type partMode uint8

const (
	modeUnassigned partMode = iota // never assigned, or forgotten
	modeActive                     // assigned; batches are being issued
	modeClosing                    // revoked: the issuer stopped, resolutions still apply
)

type cpPart struct {
	mode      partMode
	lastEpoch Epoch // highest epoch ever assigned to the partition
	t         PartitionTracker
	committed Position // last position the source confirmed committed
	issued    uint64   // modeClosing: batches the epoch issued
}

// New returns an empty Checkpointer.
func New() *Checkpointer {
	return &Checkpointer{q: newQueue()}
}

// NewIssuer returns an issuer whose batches resolve into c. Give each polling
// goroutine its own; a partition must be owned by one issuer at a time.
func (c *Checkpointer) NewIssuer() *AckIssuer {
	return &AckIssuer{q: c.q, epochs: &c.epochs}
}

// Wake returns a channel that receives a value when resolutions or assignment
// changes may be waiting; the owner then calls Drain. Signals coalesce: one
// value may stand for many pushes, so always drain everything.
func (c *Checkpointer) Wake() <-chan struct{} { return c.q.wake.C() }

// DrainStats counts what one Drain call did, for metrics.
type DrainStats struct {
	Messages int              // batch resolutions drained
	Outcomes [numOutcomes]int // per ResolveOutcome
	Statuses [numStatuses]int // per AckStatus, of messages applied to a current epoch
	Leaked   int              // resolutions made by the leak backstop
	Assigned int              // partitions assigned (new epochs)
	Revoked  int              // partitions whose issuer stopped
}

// Add accumulates o into s.
func (s *DrainStats) Add(o DrainStats) {
	s.Messages += o.Messages
	for i := range s.Outcomes {
		s.Outcomes[i] += o.Outcomes[i]
	}
	for i := range s.Statuses {
		s.Statuses[i] += o.Statuses[i]
	}
	s.Leaked += o.Leaked
	s.Assigned += o.Assigned
	s.Revoked += o.Revoked
}

// Outcome returns how many resolutions had outcome o.
func (s DrainStats) Outcome(o ResolveOutcome) int { return s.Outcomes[o] }

// Drain applies everything waiting in the queue, in the order it was pushed.
// It never waits: a push that is half done is picked up by the next Drain,
// which its producer's wake signal triggers.
func (c *Checkpointer) Drain() DrainStats { return c.DrainFunc(nil) }

// DrainFunc is Drain that also calls f, when it is not nil, with every batch
// resolution it pops and the outcome of applying it. The owner uses it to
// release what it keeps per batch (in-flight bytes, issue times); f must not
// call methods of c.
func (c *Checkpointer) DrainFunc(f func(AckMsg, ResolveOutcome)) DrainStats {
	var st DrainStats
	for {
		n := c.q.pop()
		if n == nil {
			return st
		}
		switch n.kind {
		case kindBatch:
			m := AckMsg{ID: n.id, Position: n.pos, Status: AckStatus(n.state.Load() - stateResolved), Leaked: n.leaked}
			o := c.Apply(m)
			st.Messages++
			st.Outcomes[o]++
			if o != Stale && o != Impossible && o != Duplicate {
				st.Statuses[m.Status]++
			}
			if m.Leaked {
				st.Leaked++
			}
			if f != nil {
				f(m, o)
			}
		case kindAssign:
			c.assign(n.id.Partition, n.id.Epoch, n.pos)
			st.Assigned++
		case kindRevoke:
			c.revoke(n.id.Partition, n.id.Epoch, n.issued)
			st.Revoked++
		}
	}
}

// Apply applies one resolution. Drain calls it for every message it pops; it is
// exported so tests and tools can drive a Checkpointer without an issuer. An
// acknowledgement of any epoch but the partition's current one is Stale and
// never touches a tracker: this single check is what keeps an acknowledgement
// from a revoked assignment from moving the new assignment's watermark.
func (c *Checkpointer) Apply(m AckMsg) ResolveOutcome {
	if o, ok := seededApply(c, m); ok { // a wrong variant, modelcheck build only (seeded_on.go)
		return o
	}
	p := m.ID.Partition
	if int(p) >= len(c.parts) || m.ID.Epoch == 0 || m.ID.Epoch > c.parts[p].lastEpoch {
		return Impossible
	}
	cp := &c.parts[p]
	if cp.mode == modeUnassigned || m.ID.Epoch != cp.t.epoch {
		return Stale
	}
	return cp.t.Resolve(m.ID.Seq, m.Position, m.Status)
}

func (c *Checkpointer) part(p Partition) *cpPart {
	if int(p) >= len(c.parts) {
		c.parts = append(c.parts, make([]cpPart, int(p)+1-len(c.parts))...)
	}
	return &c.parts[p]
}

func (c *Checkpointer) assign(p Partition, e Epoch, start Position) {
	cp := c.part(p)
	if e <= cp.lastEpoch {
		panic(fmt.Sprintf("checkpoint: partition %d assigned epoch %d after epoch %d", p, e, cp.lastEpoch))
	}
	// A partition assigned afresh starts committed at its start: the source
	// read that position from its own committed state. A re-assignment of a
	// partition still held (a rewind) keeps the last confirmed commit, so a
	// watermark that advanced in the old epoch but was not committed yet is
	// still offered, even if the new epoch never makes progress.
	if cp.mode == modeUnassigned {
		cp.committed = start
	}
	cp.mode = modeActive
	cp.lastEpoch = e
	cp.t.reset(e, start)
	cp.issued = 0
}

func (c *Checkpointer) revoke(p Partition, e Epoch, issued uint64) {
	cp := c.part(p)
	if cp.mode != modeActive || cp.t.epoch != e {
		return // the epoch already ended
	}
	cp.mode = modeClosing
	cp.issued = issued
}

// Forget ends p's current epoch: nothing of it will be committed, and its
// resolutions still in flight will be Stale. Call it after the final commit of a
// revoked partition, or at once for a partition that was lost.
func (c *Checkpointer) Forget(p Partition) {
	if int(p) < len(c.parts) {
		c.parts[p].mode = modeUnassigned
	}
}

// Drained reports whether p was revoked and every batch its epoch issued has
// resolved (delivered or not): waiting longer cannot move its watermark.
func (c *Checkpointer) Drained(p Partition) bool {
	if int(p) >= len(c.parts) {
		return false
	}
	cp := &c.parts[p]
	return cp.mode == modeClosing && cp.t.resolved == cp.issued
}

// Commit is a position to hand to the source: everything of Partition before
// Position is durable. Epoch says which assignment it belongs to.
type Commit struct {
	Partition Partition
	Epoch     Epoch
	Position  Position
}

// Committable appends to dst a Commit for every assigned partition whose
// watermark moved past its last committed position, and returns dst. Until
// MarkCommitted confirms them, the same partitions (with any further progress)
// come back on the next call, so a failed commit is retried by just calling
// again.
func (c *Checkpointer) Committable(dst []Commit) []Commit {
	for i := range c.parts {
		cp := &c.parts[i]
		if cp.mode != modeUnassigned && cp.t.watermark > cp.committed {
			dst = append(dst, Commit{Partition: Partition(i), Epoch: cp.t.epoch, Position: cp.t.watermark})
		}
	}
	return dst
}

// MarkCommitted records that the source durably committed cs. Commits of an
// epoch that has since ended are ignored.
func (c *Checkpointer) MarkCommitted(cs []Commit) {
	for _, m := range cs {
		if int(m.Partition) >= len(c.parts) {
			continue
		}
		cp := &c.parts[m.Partition]
		if cp.mode != modeUnassigned && cp.t.epoch == m.Epoch {
			cp.committed = max(cp.committed, m.Position) // a late confirmation never moves it back
		}
	}
}

// PartitionState describes one partition, for diagnostics and failure handling.
type PartitionState struct {
	Partition Partition
	Epoch     Epoch
	Watermark Position // everything before it is delivered
	Committed Position // last position the source confirmed
	Next      uint64   // oldest batch the watermark waits for
	Buffered  int      // resolutions waiting behind it
	Closing   bool     // revoked; no more batches will be issued
	Drained   bool     // revoked and every issued batch resolved

	// Failed is set when a batch of the epoch resolved Failed or Rejected;
	// FailedSeq is the earliest, FailedStatus its status. Blocked is set once
	// the watermark has reached it: it cannot move again in this epoch, and the
	// failure policy must rewind (Assign at Watermark) or halt.
	Failed       bool
	FailedSeq    uint64
	FailedStatus AckStatus
	Blocked      bool
}

// State returns p's state; ok is false when p is not assigned.
func (c *Checkpointer) State(p Partition) (s PartitionState, ok bool) {
	if int(p) >= len(c.parts) || c.parts[p].mode == modeUnassigned {
		return PartitionState{}, false
	}
	cp := &c.parts[p]
	t := &cp.t
	return PartitionState{
		Partition: p, Epoch: t.epoch, Watermark: t.watermark, Committed: cp.committed,
		Next: t.next, Buffered: t.buffered,
		Closing: cp.mode == modeClosing, Drained: c.Drained(p),
		Failed: t.failed, FailedSeq: t.failedSeq, FailedStatus: t.failedSt, Blocked: t.Blocked(),
	}, true
}

// States appends the state of every assigned partition to dst and returns it.
func (c *Checkpointer) States(dst []PartitionState) []PartitionState {
	for i := range c.parts {
		if s, ok := c.State(Partition(i)); ok {
			dst = append(dst, s)
		}
	}
	return dst
}
