package checkpoint

import (
	"flag"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// This file checks the Checkpointer against a deliberately naive reference
// model, in the manner of etcd-io/raft's quorum/quick_test.go. The model keeps
// every issued batch of every epoch in a plain list with the status the
// Checkpointer has been told, and recomputes each watermark from scratch by
// walking that list from the epoch's start. It shares no code with the tracker.

const modelPartitions = 2

// mBatch is one issued batch, as the model sees it.
type mBatch struct {
	id       BatchID
	start    Position // the previous batch's end (or the epoch's start)
	end      Position
	refs     int       // references not yet released
	worst    AckStatus // worst status released so far
	applied  bool      // the Checkpointer applied its resolution
	resolved AckStatus // what it applied
}

// mEpoch is one assignment of a partition.
type mEpoch struct {
	epoch   Epoch
	start   Position
	batches []*mBatch // by sequence number
}

// watermark walks the epoch's batches from the first and stops at the first
// one not applied as Delivered; it also returns how many it passed.
func (e *mEpoch) watermark() (Position, int) {
	wm := e.start
	for i, b := range e.batches {
		if !b.applied || b.resolved != Delivered {
			return wm, i
		}
		wm = b.end
	}
	return wm, len(e.batches)
}

// mPart is the Checkpointer's view of one partition in the model.
type mPart struct {
	mode      partMode
	cur       *mEpoch // nil until first assigned
	committed Position
	issued    int // when closing: batches the epoch issued
}

// mIssuerPart is the issuer's view of one partition in the model.
type mIssuerPart struct {
	ep   *mEpoch // nil when not assigned
	last Position
}

// mEvent is one entry of the model's queue, in push order.
type mEvent struct {
	kind   nodeKind
	p      Partition
	ep     *mEpoch
	b      *mBatch
	issued int
}

// mRef is a reference held by the test: the real one and its model batch.
type mRef struct {
	r AckRef
	b *mBatch
}

type checkpointModel struct {
	c  *Checkpointer
	is *AckIssuer

	epochs uint64
	issuer [modelPartitions]mIssuerPart
	parts  [modelPartitions]mPart
	queue  []mEvent
	refs   []*mRef
	sets   [2]struct {
		s    AckSet
		held []*mBatch
	}
	lastCommit [modelPartitions]Commit // to check commits never regress within an epoch
}

func newCheckpointModel() *checkpointModel {
	c := New()
	return &checkpointModel{c: c, is: c.NewIssuer()}
}

var statusGen = rapid.SampledFrom([]AckStatus{Delivered, Delivered, Delivered, Delivered, Delivered, Failed, Rejected})

func (m *checkpointModel) drawPart(t *rapid.T) Partition {
	return Partition(rapid.IntRange(0, modelPartitions-1).Draw(t, "p"))
}

// release lowers b's count in the model, queuing its resolution at zero.
func (m *checkpointModel) release(b *mBatch, st AckStatus) {
	b.refs--
	b.worst = b.worst.Merge(st)
	if b.refs == 0 {
		m.queue = append(m.queue, mEvent{kind: kindBatch, p: b.id.Partition, b: b})
	}
}

// Rebalance changes an assignment: a new epoch (an assignment after a
// rebalance, or a rewind to the watermark), a revoke, or a Forget. They are one
// action so that they stay rare next to the data path and windows can grow.
func (m *checkpointModel) Rebalance(t *rapid.T) {
	p := m.drawPart(t)
	switch rapid.SampledFrom([]string{"assign", "assign", "revoke", "forget"}).Draw(t, "kind") {
	case "assign":
		start := Position(rapid.IntRange(0, 100).Draw(t, "start"))
		if cur := m.parts[p].cur; cur != nil && rapid.Bool().Draw(t, "rewind") {
			start, _ = cur.watermark() // the failure policy's rewind
		}
		m.assign(t, p, start)
	case "revoke":
		m.is.Revoke(p)
		if ip := &m.issuer[p]; ip.ep != nil {
			m.queue = append(m.queue, mEvent{kind: kindRevoke, p: p, ep: ip.ep, issued: len(ip.ep.batches)})
			*ip = mIssuerPart{}
		}
	case "forget":
		m.c.Forget(p)
		m.parts[p].mode = modeUnassigned
	}
}

func (m *checkpointModel) assign(t *rapid.T, p Partition, start Position) {
	e := m.is.Assign(p, start)
	m.epochs++
	if e != Epoch(m.epochs) {
		t.Fatalf("Assign returned epoch %d, want %d", e, m.epochs)
	}
	ep := &mEpoch{epoch: e, start: start}
	m.issuer[p] = mIssuerPart{ep: ep, last: start}
	m.queue = append(m.queue, mEvent{kind: kindAssign, p: p, ep: ep})
}

func (m *checkpointModel) Issue(t *rapid.T) {
	// Skip before drawing anything: rapid treats a skip after a draw as an
	// invalid test case rather than an action that does not apply.
	var assigned []Partition
	for p := range m.issuer {
		if m.issuer[p].ep != nil {
			assigned = append(assigned, Partition(p))
		}
	}
	if len(assigned) == 0 {
		t.Skip("no partition assigned")
	}
	p := rapid.SampledFrom(assigned).Draw(t, "p")
	ip := &m.issuer[p]
	// A poll loop issues batches back to back; several per step make deep
	// out-of-order windows likely within rapid's default number of steps.
	for n := rapid.IntRange(1, 3).Draw(t, "batches"); n > 0; n-- {
		end := ip.last + Position(rapid.IntRange(0, 3).Draw(t, "len"))
		b := &mBatch{id: BatchID{p, ip.ep.epoch, uint64(len(ip.ep.batches))}, start: ip.last, end: end, refs: 1}
		r := m.is.Issue(p, end)
		if r.Batch() != b.id {
			t.Fatalf("Issue returned batch %v, want %v", r.Batch(), b.id)
		}
		ip.ep.batches = append(ip.ep.batches, b)
		ip.last = end
		m.refs = append(m.refs, &mRef{r: r, b: b})
	}
}

func (m *checkpointModel) drawRef(t *rapid.T) int {
	if len(m.refs) == 0 {
		t.Skip("no references")
	}
	return rapid.IntRange(0, len(m.refs)-1).Draw(t, "ref")
}

func (m *checkpointModel) Clone(t *rapid.T) {
	mr := m.refs[m.drawRef(t)]
	m.refs = append(m.refs, &mRef{r: mr.r.Clone(), b: mr.b})
	mr.b.refs++
}

// Release releases a few held references, of any batch: releases are
// shuffled across batches, epochs and partitions.
func (m *checkpointModel) Release(t *rapid.T) {
	for n := rapid.IntRange(1, 3).Draw(t, "releases"); n > 0 && len(m.refs) > 0; n-- {
		i := m.drawRef(t)
		st := statusGen.Draw(t, "status")
		mr := m.refs[i]
		mr.r.Release(st)
		m.refs = slices.Delete(m.refs, i, i+1)
		m.release(mr.b, st)
	}
}

// Hold moves a reference into one of two sinks' AckSets.
func (m *checkpointModel) Hold(t *rapid.T) {
	i := m.drawRef(t)
	s := &m.sets[rapid.IntRange(0, len(m.sets)-1).Draw(t, "set")]
	mr := m.refs[i]
	s.s.Add(&mr.r)
	s.held = append(s.held, mr.b)
	m.refs = slices.Delete(m.refs, i, i+1)
}

// Flush gives a sink's AckSet its outcome: the write was durable, or not.
func (m *checkpointModel) Flush(t *rapid.T) {
	s := &m.sets[rapid.IntRange(0, len(m.sets)-1).Draw(t, "set")]
	st := statusGen.Draw(t, "status")
	if s.s.Refs() != int64(len(s.held)) {
		t.Fatalf("AckSet holds %d references, model %d", s.s.Refs(), len(s.held))
	}
	s.s.Fail(st)
	for _, b := range s.held {
		m.release(b, st)
	}
	s.held = s.held[:0]
}

func (m *checkpointModel) Drain(t *rapid.T) {
	got := m.c.Drain()
	var want DrainStats
	for _, ev := range m.queue {
		mp := &m.parts[ev.p]
		switch ev.kind {
		case kindAssign:
			// A fresh assignment starts committed at its start; a re-assignment
			// of a held partition (a rewind) keeps the last confirmed commit.
			committed := ev.ep.start
			if mp.mode != modeUnassigned {
				committed = mp.committed
			}
			*mp = mPart{mode: modeActive, cur: ev.ep, committed: committed}
			want.Assigned++
		case kindRevoke:
			if mp.mode == modeActive && mp.cur == ev.ep {
				mp.mode, mp.issued = modeClosing, ev.issued
			}
			want.Revoked++
		case kindBatch:
			want.Messages++
			if mp.mode == modeUnassigned || mp.cur.epoch != ev.b.id.Epoch {
				want.Outcomes[Stale]++
				continue
			}
			ev.b.applied, ev.b.resolved = true, ev.b.worst
			want.Statuses[ev.b.worst]++
		}
	}
	m.queue = m.queue[:0]
	if got.Messages != want.Messages || got.Assigned != want.Assigned || got.Revoked != want.Revoked ||
		got.Statuses != want.Statuses || got.Outcome(Stale) != want.Outcome(Stale) {
		t.Fatalf("Drain = %+v\nmodel  %+v", got, want)
	}
	if got.Outcome(Duplicate) != 0 || got.Outcome(Impossible) != 0 || got.Leaked != 0 {
		t.Fatalf("Drain reported duplicates, impossible or leaked resolutions: %+v", got)
	}
}

// Commit takes what is committable, checks it against the model and, unless
// the source's commit fails, confirms it.
func (m *checkpointModel) Commit(t *rapid.T) {
	got := m.c.Committable(nil)
	var want []Commit
	for p := range m.parts {
		mp := &m.parts[p]
		if mp.mode == modeUnassigned {
			continue
		}
		if wm, _ := mp.cur.watermark(); wm > mp.committed {
			want = append(want, Commit{Partition(p), mp.cur.epoch, wm})
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Committable = %v, model %v", got, want)
	}
	for _, cm := range got {
		// The promise itself, checked without the watermark: no batch of the
		// epoch that holds data before the committed position is anything but
		// delivered.
		for _, b := range m.parts[cm.Partition].cur.batches {
			if b.start < cm.Position && b.start < b.end && (!b.applied || b.resolved != Delivered) {
				t.Fatalf("commit %+v passes batch %v [%d, %d) which is not delivered", cm, b.id, b.start, b.end)
			}
		}
		if last := m.lastCommit[cm.Partition]; last.Epoch == cm.Epoch && cm.Position < last.Position {
			t.Fatalf("commit %+v regresses from %+v in the same epoch", cm, last)
		}
		m.lastCommit[cm.Partition] = cm
	}
	if rapid.Bool().Draw(t, "commit fails") {
		return // the same positions must come back next time
	}
	m.c.MarkCommitted(got)
	for _, cm := range got {
		m.parts[cm.Partition].committed = cm.Position
	}
}

// Check compares every partition's state with the model after each action.
func (m *checkpointModel) Check(t *rapid.T) {
	for p := range m.parts {
		mp := &m.parts[p]
		got, ok := m.c.State(Partition(p))
		if ok != (mp.mode != modeUnassigned) {
			t.Fatalf("State(%d) ok = %v, model mode %d", p, ok, mp.mode)
		}
		if !ok {
			continue
		}
		ep := mp.cur
		wm, next := ep.watermark()
		want := PartitionState{
			Partition: Partition(p), Epoch: ep.epoch, Watermark: wm, Committed: mp.committed,
			Next: uint64(next), Closing: mp.mode == modeClosing,
		}
		applied := 0
		for _, b := range ep.batches {
			if !b.applied {
				continue
			}
			applied++
			if b.resolved != Delivered && !want.Failed {
				want.Failed, want.FailedSeq, want.FailedStatus = true, b.id.Seq, b.resolved
			}
		}
		want.Buffered = applied - next
		want.Blocked = want.Failed && want.FailedSeq == want.Next
		want.Drained = want.Closing && applied == mp.issued
		if got != want {
			t.Fatalf("State(%d) = %+v\nmodel      %+v", p, got, want)
		}
	}
}

// finish releases everything still held as Delivered and drains: a partition
// whose epoch saw no failure must then have its watermark at the end of the last
// batch issued, so nothing delivered is ever left uncommittable.
func (m *checkpointModel) finish(t *rapid.T) {
	for _, mr := range m.refs {
		mr.r.Release(Delivered)
		m.release(mr.b, Delivered)
	}
	m.refs = nil
	for i := range m.sets {
		s := &m.sets[i]
		s.s.Ack()
		for _, b := range s.held {
			m.release(b, Delivered)
		}
		s.held = nil
	}
	m.Drain(t)
	m.Check(t)
	for p := range m.parts {
		mp := &m.parts[p]
		if mp.mode == modeUnassigned {
			continue
		}
		for _, b := range mp.cur.batches {
			if !b.applied {
				t.Fatalf("p%d: batch %v never applied after every reference was released", p, b.id)
			}
		}
		st, _ := m.c.State(Partition(p))
		if mp.mode == modeClosing && !st.Drained {
			t.Fatalf("p%d: revoked and every batch resolved, but not Drained: %+v", p, st)
		}
		if st.Failed {
			continue
		}
		if n := len(mp.cur.batches); n > 0 && st.Watermark != mp.cur.batches[n-1].end {
			t.Fatalf("p%d: all delivered but watermark %d, last batch ends at %d", p, st.Watermark, mp.cur.batches[n-1].end)
		}
	}
}

// TestCheckpointerModel drives a Checkpointer with random sequences of
// assignments, revokes, issues, clones, releases of any held reference with any
// status, AckSet holds and flushes, drains, commits (some failing) and forgets,
// and checks every state and every committed position against the naive model.
// This is invariant 3 under random schedules: a position is committed only when
// every batch before it in its epoch was delivered, acknowledgements of ended
// epochs never count, and nothing delivered is held back.
func TestCheckpointerModel(t *testing.T) {
	// rapid's default of 30 actions per case seldom builds an out-of-order
	// window deep enough to matter before a revoke or re-assign clears it.
	// Lengthen the cases unless -rapid.steps was given.
	stepsSet := false
	flag.Visit(func(f *flag.Flag) { stepsSet = stepsSet || f.Name == "rapid.steps" })
	if f := flag.Lookup("rapid.steps"); f != nil && !stepsSet {
		old := f.Value.String()
		f.Value.Set("200")
		defer f.Value.Set(old)
	}
	rapid.Check(t, func(t *rapid.T) {
		m := newCheckpointModel()
		for p := range Partition(modelPartitions) {
			m.assign(t, p, Position(10*p))
		}
		t.Repeat(rapid.StateMachineActions(m))
		m.finish(t)
	})
}
