package checkpoint

import (
	"runtime"
	"testing"
	"time"
)

// waitLeaks collects garbage and drains c until at least want leaked
// resolutions arrived, and returns everything drained. The backstop runs as a
// cleanup after a GC cycle finds a slab unreachable, and pushes to the queue,
// which signals Wake: the test waits on that signal, re-running the GC if none
// comes for a while (a cleanup can need more than one cycle to be queued).
func waitLeaks(t *testing.T, c *Checkpointer, want int) DrainStats {
	t.Helper()
	var st DrainStats
	deadline := time.After(30 * time.Second)
	for st.Leaked < want {
		runtime.GC()
		select {
		case <-c.Wake():
			st.Add(c.Drain())
		case <-time.After(50 * time.Millisecond):
			// No resolution yet: collect again.
		case <-deadline:
			t.Fatalf("after 30s of GC, %d of %d leaked batches resolved; drained %+v", st.Leaked, want, st)
		}
	}
	return st
}

// issueSlab issues a whole slab of batches on p, so that the issuer lets go of
// the slab, and releases every reference as Delivered except those of leak,
// which it drops. noinline keeps the dropped references in this frame only.
//
//go:noinline
func issueSlab(is *AckIssuer, p Partition, leak map[int]bool) {
	refs := make([]AckRef, slabSize)
	for i := range refs {
		refs[i] = is.Issue(p, is.parts[p].last+1)
	}
	for i := range refs {
		if !leak[i] {
			refs[i].Release(Delivered)
		}
	}
}

// TestLeakBackstopResolvesOnlyPending runs the backstop directly, as the
// cleanup does, on a slab that is still in use, so that what it resolves does
// not depend on when a collection runs: every batch of the slab that was issued
// and is still pending resolves Failed and leaked, each counted once in
// DrainStats.Leaked; batches resolved by a release and slots never issued are
// left alone, and a second run finds nothing. (The tests below show the
// cleanup runs it once a slab is unreachable; this one comes first so that a
// broken backstop fails at once, not after their 30 s of collections.)
func TestLeakBackstopResolvesOnlyPending(t *testing.T) {
	c := New()
	is := c.NewIssuer()
	is.Assign(0, 0)
	a := is.Issue(0, 10)
	_, _ = is.Issue(0, 20), is.Issue(0, 30) // dropped: pending for good
	a.Release(Delivered)
	if st := c.Drain(); st.Messages != 1 || st.Leaked != 0 {
		t.Fatalf("before the backstop: %+v", st)
	}

	resolveLeaked(is.ns)
	st := c.Drain()
	if st.Messages != 2 || st.Leaked != 2 || st.Statuses != [numStatuses]int{Failed: 2} || st.Outcome(FailedBatch) != 2 {
		t.Fatalf("after the backstop: %+v, want the two pending batches failed and leaked", st)
	}
	if s, _ := c.State(0); s.Watermark != 10 || s.FailedSeq != 1 || !s.Blocked {
		t.Fatalf("state %+v, want watermark 10, blocked on s1", s)
	}
	resolveLeaked(is.ns)
	if st := c.Drain(); st != (DrainStats{}) {
		t.Fatalf("a second run of the backstop resolved again: %+v", st)
	}
}

// TestLeakedRefResolvesFailed checks the fail-safe that stands in for Rust's
// Drop: a reference dropped without a release cannot hang its partition
// forever, and is never taken for a delivery. Once its slab is unreachable the
// batch resolves Failed with Leaked set, the watermark stops before it, and
// DrainStats counts it. A batch still referenced is left alone.
func TestLeakedRefResolvesFailed(t *testing.T) {
	c := New()
	is := c.NewIssuer()
	is.Assign(0, 0)
	issueSlab(is, 0, map[int]bool{10: true})

	// A batch of a slab that stays reachable must not resolve, however many
	// GC cycles run.
	is.Assign(1, 0)
	held := is.Issue(1, 5)
	for range slabSize - 1 {
		r := is.Issue(1, 5)
		r.Release(Delivered)
	}

	st := c.Drain()
	if st.Messages != 2*slabSize-2 {
		t.Fatalf("before GC: %d resolutions, want %d", st.Messages, 2*slabSize-2)
	}
	st = waitLeaks(t, c, 1)
	if st.Leaked != 1 || st.Messages != 1 || st.Statuses[Failed] != 1 || st.Outcome(FailedBatch) != 1 {
		t.Fatalf("leak resolutions: %+v, want one leaked failed batch", st)
	}
	s, _ := c.State(0)
	if s.Watermark != 10 || !s.Failed || s.FailedSeq != 10 || s.FailedStatus != Failed || !s.Blocked {
		t.Fatalf("p0 after the leak: %+v, want watermark 10 blocked on s10", s)
	}

	runtime.GC()
	runtime.GC()
	if st := c.Drain(); st.Messages != 0 {
		t.Fatalf("a held batch resolved without a release: %+v", st)
	}
	held.Release(Delivered)
	if st := c.Drain(); st.Messages != 1 || st.Leaked != 0 || st.Statuses[Delivered] != 1 {
		t.Fatalf("releasing the held reference: %+v", st)
	}
	if s, _ := c.State(1); s.Watermark != 5 || s.Failed {
		t.Fatalf("p1: %+v", s)
	}
}

// issueAndDropIssuer issues three batches with a fresh issuer, releases two and
// drops the third along with the issuer, which held the slab's only other
// pointer.
//
//go:noinline
func issueAndDropIssuer(c *Checkpointer) {
	is := c.NewIssuer()
	is.Assign(0, 100)
	a, b, d := is.Issue(0, 110), is.Issue(0, 120), is.Issue(0, 130)
	a.Release(Delivered)
	d.Release(Delivered)
	_ = b
}

// TestLeakWithIssuerDropped checks the backstop for a slab the issuer never
// used up: it fires once the issuer is gone too.
func TestLeakWithIssuerDropped(t *testing.T) {
	c := New()
	issueAndDropIssuer(c)
	st := waitLeaks(t, c, 1)
	if st.Leaked != 1 || st.Statuses != [numStatuses]int{Delivered: 2, Failed: 1} {
		t.Fatalf("drained %+v, want two delivered and one leaked", st)
	}
	s, _ := c.State(0)
	if s.Watermark != 110 || s.FailedSeq != 1 || !s.Blocked {
		t.Fatalf("state %+v, want watermark 110, blocked on s1", s)
	}
}

// abandonSet issues a slab whose batches 5 to 9 are held by an AckSet (and,
// for 5 and 6, also by references released as Delivered), then drops the set
// without an outcome: a sink that died mid-write.
//
//go:noinline
func abandonSet(is *AckIssuer) {
	var set AckSet
	refs := make([]AckRef, slabSize)
	for i := range refs {
		refs[i] = is.Issue(0, Position(i+1))
	}
	for i := 5; i < 10; i++ {
		for range 3 {
			cl := refs[i].Clone()
			set.Add(&cl)
		}
		if i < 7 {
			continue // keep the batch's own reference: released below
		}
		set.Add(&refs[i])
	}
	for i := range refs {
		if !refs[i].IsZero() {
			refs[i].Release(Delivered)
		}
	}
}

// TestAbandonedAckSetNeverDelivers checks AckSet's fail-safe: a set dropped
// without Ack or Fail never reports its batches delivered, even when every
// other reference of those batches was released Delivered. They resolve as
// leaked failures.
func TestAbandonedAckSetNeverDelivers(t *testing.T) {
	c := New()
	is := c.NewIssuer()
	is.Assign(0, 0)
	abandonSet(is)
	st := c.Drain()
	if st.Messages != slabSize-5 {
		t.Fatalf("before GC: %+v", st)
	}
	st = waitLeaks(t, c, 5)
	if st.Leaked != 5 || st.Statuses[Delivered] != 0 || st.Statuses[Failed] != 5 {
		t.Fatalf("drained %+v, want exactly the five held batches, failed and leaked", st)
	}
	s, _ := c.State(0)
	if s.Watermark != 5 || s.FailedSeq != 5 || !s.Blocked {
		t.Fatalf("state %+v, want the watermark stopped before the abandoned set's first batch", s)
	}
}
