//go:build modelcheck

package checkpoint

import (
	"fmt"
	"testing"

	"github.com/weir-etl/weir/internal/modelcheck"
)

// The models below run the real ack path (this package compiled with the
// modelcheck tag, whose internal/acksync makes every atomic operation and the
// wake channel a scheduling point) under every schedule with at most
// mcPreemptions preemptions. Run them with
//
//	go test -tags modelcheck ./checkpoint/ ./internal/modelcheck/
//
// Each model is a function of one schedule: it builds a fresh Checkpointer,
// starts the goroutines of the scenario, plays the Checkpointer's goroutine
// itself (drain, check, park on the wake), and checks the end state in Finally.

// mcPreemptions is the bound the models are checked with. Every seeded bug of
// modelcheck_seeded_test.go needs at most two.
const mcPreemptions = 2

// mcConfig bounds each model's exploration; MaxSchedules keeps CI time bounded
// whatever the models grow into (the current ones finish well below it).
var mcConfig = modelcheck.Config{Preemptions: mcPreemptions, MaxSchedules: 200_000}

// mcDrainUntil is the Checkpointer goroutine's loop: drain everything, check,
// and if fewer than want resolutions arrived, park on the wake channel and
// repeat. A lost wake-up leaves it parked forever, which the explorer reports
// as a deadlock.
func mcDrainUntil(c *Checkpointer, want int, check func(DrainStats)) DrainStats {
	var total DrainStats
	for {
		total.Add(c.Drain())
		if check != nil {
			check(total)
		}
		if total.Messages >= want {
			return total
		}
		c.q.wake.Wait()
	}
}

// mcCloneRelease: one batch, a chain of goroutines; each clones the reference
// it holds for the next goroutine and then releases its own with statuses[i].
// Clones race with releases. Exactly one AckMsg must result, carrying the worst
// status: never zero (the Checkpointer would wait forever), never two.
func mcCloneRelease(statuses ...AckStatus) func(*modelcheck.Model) {
	worst := Delivered
	for _, s := range statuses {
		worst = worst.Merge(s)
	}
	return func(m *modelcheck.Model) {
		c := New()
		is := c.NewIssuer()
		is.Assign(0, 0)
		var start func(i int, r AckRef)
		start = func(i int, r AckRef) {
			m.Go(fmt.Sprintf("release%d", i), func() {
				if i+1 < len(statuses) {
					start(i+1, r.Clone())
				}
				r.Release(statuses[i])
			})
		}
		start(0, is.Issue(0, 10))
		got := mcDrainUntil(c, 1, func(st DrainStats) {
			m.Assert(st.Messages <= 1, "batch resolved %d times", st.Messages)
		})
		m.Finally(func() {
			got.Add(c.Drain())
			m.Assert(got.Messages == 1, "batch resolved %d times, want exactly once", got.Messages)
			m.Assert(got.Statuses[worst] == 1, "batch resolved with statuses %v, want one %v (the worst released)", got.Statuses, worst)
		})
	}
}

func TestModelCloneRelease(t *testing.T) {
	modelcheck.Check(t, mcConfig, mcCloneRelease(Failed, Rejected, Delivered))
}

// TestModelCloneN is a batch handed to its records with CloneN, as the
// runtime hands a poll batch to its records: one thread stores the copies and
// releases its own reference while each copy is released on a thread of its
// own; the batch resolves once, at the last release, with the worst status.
func TestModelCloneN(t *testing.T) {
	statuses := []AckStatus{Delivered, Rejected, Delivered}
	modelcheck.Check(t, mcConfig, func(m *modelcheck.Model) {
		c := New()
		is := c.NewIssuer()
		is.Assign(0, 0)
		r := is.Issue(0, 10)
		m.Go("issuer", func() {
			v := r.CloneN(len(statuses))
			for i, s := range statuses {
				cp := v
				m.Go(fmt.Sprintf("release%d", i), func() { cp.Release(s) })
			}
			r.Release(Delivered)
		})
		got := mcDrainUntil(c, 1, func(st DrainStats) {
			m.Assert(st.Messages <= 1, "batch resolved %d times", st.Messages)
		})
		m.Finally(func() {
			got.Add(c.Drain())
			m.Assert(got.Messages == 1, "batch resolved %d times, want exactly once", got.Messages)
			m.Assert(got.Statuses[Rejected] == 1, "batch resolved with statuses %v, want one Rejected", got.Statuses)
		})
	})
}

// mcBatch is one batch of a model: its reference, where it ends, the status it
// will be released with, and whether its release has begun (set just before
// Release, so a batch that is not marked cannot have resolved).
type mcBatch struct {
	p        Partition
	ref      AckRef
	end      Position
	st       AckStatus
	released bool
}

// mcSafe is the highest position of p that may be committed: the end of the
// longest run of batches, from the epoch's start, that were released as
// Delivered. Anything beyond would pass an unresolved or failed batch.
func mcSafe(start Position, bs []*mcBatch) Position {
	safe := start
	for _, b := range bs {
		if !b.released || b.st != Delivered {
			break
		}
		safe = b.end
	}
	return safe
}

// mcWatch checks, after each drain, every partition's watermark and its
// committable positions against mcSafe, and that neither ever moves back
// within an epoch. It commits what is committable, as the owner would.
type mcWatch struct {
	m       *modelcheck.Model
	c       *Checkpointer
	batches map[Epoch][]*mcBatch // batches of each epoch, in issue order
	starts  map[Epoch]Position
	lastWM  map[Epoch]Position
	lastCom map[Epoch]Position
	srcCom  map[Partition]Position // the source's committed position
}

func newMCWatch(m *modelcheck.Model, c *Checkpointer) *mcWatch {
	return &mcWatch{m: m, c: c, batches: map[Epoch][]*mcBatch{}, starts: map[Epoch]Position{},
		lastWM: map[Epoch]Position{}, lastCom: map[Epoch]Position{}, srcCom: map[Partition]Position{}}
}

func (w *mcWatch) check() {
	for _, s := range w.c.States(nil) {
		safe := mcSafe(w.starts[s.Epoch], w.batches[s.Epoch])
		w.m.Assert(s.Watermark <= safe, "p%d epoch %d: watermark %d passes an unresolved or failed batch (safe up to %d)", s.Partition, s.Epoch, s.Watermark, safe)
		last, seen := w.lastWM[s.Epoch]
		w.m.Assert(!seen || s.Watermark >= last, "p%d epoch %d: watermark went back from %d to %d", s.Partition, s.Epoch, last, s.Watermark)
		w.lastWM[s.Epoch] = s.Watermark
		w.m.Assert(s.Committed >= w.srcCom[s.Partition], "p%d epoch %d: committed position went back from %d to %d", s.Partition, s.Epoch, w.srcCom[s.Partition], s.Committed)
	}
	cs := w.c.Committable(nil)
	for _, cm := range cs {
		safe := mcSafe(w.starts[cm.Epoch], w.batches[cm.Epoch])
		w.m.Assert(cm.Position <= safe, "p%d epoch %d: committable %d passes an unresolved or failed batch (safe up to %d)", cm.Partition, cm.Epoch, cm.Position, safe)
		last, seen := w.lastCom[cm.Epoch]
		w.m.Assert(!seen || cm.Position > last, "p%d epoch %d: commit went back from %d to %d", cm.Partition, cm.Epoch, last, cm.Position)
		w.lastCom[cm.Epoch] = cm.Position
		w.srcCom[cm.Partition] = cm.Position
	}
	w.c.MarkCommitted(cs)
}

// issue issues a batch and records it for the checks.
func (w *mcWatch) issue(is *AckIssuer, p Partition, end Position, st AckStatus) *mcBatch {
	b := &mcBatch{p: p, ref: is.Issue(p, end), end: end, st: st}
	e := is.Epoch(p)
	w.batches[e] = append(w.batches[e], b)
	return b
}

func (w *mcWatch) assign(is *AckIssuer, p Partition, start Position) Epoch {
	e := is.Assign(p, start)
	w.starts[e] = start
	return e
}

// release releases b with its status, marking it first.
func (b *mcBatch) release() {
	b.released = true
	b.ref.Release(b.st)
}

// mcWatermark: batches of two partitions resolve concurrently, out of order
// and one of them failed, while the Checkpointer drains. No resolution is lost
// or applied twice; no watermark or commit passes an unresolved or failed batch
// or moves back; in the end p0 stops before its failed batch and p1 is whole.
func mcWatermark(m *modelcheck.Model) {
	c := New()
	is := c.NewIssuer()
	w := newMCWatch(m, c)
	w.assign(is, 0, 0)
	w.assign(is, 1, 100)
	p0s0 := w.issue(is, 0, 10, Delivered)
	p0s1 := w.issue(is, 0, 20, Failed)
	p0s2 := w.issue(is, 0, 30, Delivered)
	p1s0 := w.issue(is, 1, 110, Delivered)
	p1s1 := w.issue(is, 1, 120, Delivered)
	m.Go("sink-a", func() {
		p0s2.release()
		p0s0.release()
		p1s1.release()
	})
	m.Go("sink-b", func() {
		p0s1.release()
		p1s0.release()
	})
	got := mcDrainUntil(c, 5, func(DrainStats) { w.check() })
	m.Finally(func() {
		got.Add(c.Drain())
		w.check()
		m.Assert(got.Messages == 5, "%d resolutions drained, want 5", got.Messages)
		for _, o := range []ResolveOutcome{Duplicate, Stale, Impossible} {
			m.Assert(got.Outcome(o) == 0, "%d resolutions were %v", got.Outcome(o), o)
		}
		s0, _ := c.State(0)
		s1, _ := c.State(1)
		m.Assert(s0.Watermark == 10 && s0.Blocked, "p0 ends at %d (blocked %v), want 10, blocked by its failed batch", s0.Watermark, s0.Blocked)
		m.Assert(s1.Watermark == 120 && s1.Committed == 120, "p1 ends at watermark %d committed %d, want 120", s1.Watermark, s1.Committed)
	})
}

func TestModelWatermark(t *testing.T) {
	modelcheck.Check(t, mcConfig, mcWatermark)
}

// mcRevoke: a partition is revoked and re-assigned at its start (a rewind:
// new epoch) while both batches of the old epoch are still being released.
// The old acknowledgements are applied to the old epoch or discarded as
// stale, never to the new one; the new epoch's watermark and commits depend
// only on its own batches, and the committed position never moves back (a
// rewind keeps the old epoch's last confirmed commit).
func mcRevoke(m *modelcheck.Model) {
	c := New()
	is := c.NewIssuer()
	w := newMCWatch(m, c)
	e1 := w.assign(is, 0, 0)
	old0 := w.issue(is, 0, 10, Delivered)
	old1 := w.issue(is, 0, 20, Delivered)
	m.Go("old-sink-0", old0.release)
	m.Go("old-sink-1", old1.release)
	// The polling goroutine owns the issuer from here on. Epochs are
	// numbered in assignment order, so the new one is e1+1.
	e2 := e1 + 1
	w.starts[e2] = 0
	m.Go("poller", func() {
		is.Revoke(0)
		if e := is.Assign(0, 0); e != e2 {
			m.Failf("re-assign got epoch %d, want %d", e, e2)
		}
		n0 := w.issue(is, 0, 5, Delivered)
		n1 := w.issue(is, 0, 7, Failed)
		n0.release()
		n1.release()
	})
	got := mcDrainUntil(c, 4, func(DrainStats) { w.check() })
	m.Finally(func() {
		got.Add(c.Drain())
		w.check()
		m.Assert(got.Messages == 4, "%d resolutions drained, want 4", got.Messages)
		m.Assert(got.Outcome(Duplicate) == 0 && got.Outcome(Impossible) == 0,
			"an old-epoch acknowledgement reached the new epoch's tracker: %d duplicate, %d impossible", got.Outcome(Duplicate), got.Outcome(Impossible))
		s, ok := c.State(0)
		m.Assert(ok && s.Epoch == e2, "partition 0 is at epoch %d (assigned %v), want %d", s.Epoch, ok, e2)
		m.Assert(s.Watermark == 5, "new epoch ends at watermark %d, want 5: only its own batches count", s.Watermark)
		want := max(5, w.lastCom[e1])
		m.Assert(s.Committed == want, "new epoch ends committed at %d, want %d: its own 5 or the old epoch's last commit", s.Committed, want)
	})
}

func TestModelRevokeReassign(t *testing.T) {
	modelcheck.Check(t, mcConfig, mcRevoke)
}

// mcAckSet: a sink holds references of batch X in two AckSets, one of them
// also holding batch Y; it merges them and gives the outcome, while another
// goroutine holds a clone of X, clones it again and releases both, and a third
// releases Y's own reference. Each batch resolves exactly once, with the
// set's outcome as its worst status.
func mcAckSet(outcome AckStatus) func(*modelcheck.Model) {
	return func(m *modelcheck.Model) {
		c := New()
		is := c.NewIssuer()
		is.Assign(0, 0)
		x := is.Issue(0, 10)
		y := is.Issue(0, 20)
		var s1, s2 AckSet
		for range 2 {
			r := x.Clone()
			s1.Add(&r)
		}
		rx, ry := x.Clone(), y.Clone()
		s2.Add(&rx)
		s2.Add(&ry)
		m.Go("sink", func() {
			s1.Merge(&s2)
			s1.Fail(outcome)
		})
		m.Go("holder-x", func() {
			x2 := x.Clone()
			x.Release(Delivered)
			x2.Release(Delivered)
		})
		m.Go("holder-y", func() { y.Release(Delivered) })
		got := mcDrainUntil(c, 2, nil)
		m.Finally(func() {
			got.Add(c.Drain())
			m.Assert(got.Messages == 2 && got.Statuses[outcome] == 2, "drained %d resolutions with statuses %v, want 2 %v", got.Messages, got.Statuses, outcome)
			want := Position(0)
			if outcome == Delivered {
				want = 20
			}
			s, _ := c.State(0)
			m.Assert(s.Watermark == want, "watermark %d, want %d", s.Watermark, want)
		})
	}
}

func TestModelAckSet(t *testing.T) {
	t.Run("fail", func(t *testing.T) { modelcheck.Check(t, mcConfig, mcAckSet(Failed)) })
	t.Run("ack", func(t *testing.T) { modelcheck.Check(t, mcConfig, mcAckSet(Delivered)) })
}

// mcWake: two producers resolve batches while the Checkpointer drains and
// parks. The consumer must never park while a resolution sits in the queue
// with nobody left to signal: that is a lost wake-up, and the explorer
// reports it as a deadlock. Pops that see a push half done (tail swapped, not
// yet linked) are among the schedules.
func mcWake(m *modelcheck.Model) {
	c := New()
	is := c.NewIssuer()
	is.Assign(0, 0)
	is.Assign(1, 0)
	a := is.Issue(0, 10)
	b := is.Issue(1, 10)
	m.Go("producer-a", func() { a.Release(Delivered) })
	m.Go("producer-b", func() { b.Release(Delivered) })
	got := mcDrainUntil(c, 2, nil)
	m.Finally(func() {
		got.Add(c.Drain())
		m.Assert(got.Messages == 2 && got.Outcome(Advanced) == 2, "drained %d resolutions, outcomes %v, want 2 advanced", got.Messages, got.Outcomes)
	})
}

func TestModelWake(t *testing.T) {
	modelcheck.Check(t, mcConfig, mcWake)
}

// mcWakeOne is mcWake with one producer: small enough to explore every
// schedule, with no preemption bound.
func mcWakeOne(m *modelcheck.Model) {
	c := New()
	is := c.NewIssuer()
	is.Assign(0, 0)
	a := is.Issue(0, 10)
	m.Go("producer", func() { a.Release(Delivered) })
	got := mcDrainUntil(c, 1, nil)
	m.Finally(func() {
		got.Add(c.Drain())
		m.Assert(got.Messages == 1 && got.Outcome(Advanced) == 1, "drained %d resolutions, outcomes %v, want 1 advanced", got.Messages, got.Outcomes)
	})
}

func TestModelWakeExhaustive(t *testing.T) {
	res := modelcheck.Check(t, modelcheck.Config{Exhaustive: true, MaxSchedules: 200_000}, mcWakeOne)
	if !res.Complete && res.Failure == nil {
		t.Errorf("exhaustive exploration stopped at the cap after %d schedules", res.Schedules)
	}
}
