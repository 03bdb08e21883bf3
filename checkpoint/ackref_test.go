package checkpoint

import (
	"slices"
	"testing"
)

// drainOne drains c and returns the single batch message it applied.
func drainOne(t *testing.T, c *Checkpointer) DrainStats {
	t.Helper()
	st := c.Drain()
	if st.Messages != 1 {
		t.Fatalf("Drain applied %d messages, want 1: %+v", st.Messages, st)
	}
	return st
}

// TestAckRefWorstStatus checks that a batch resolves exactly when its last
// reference is released, with the worst status any reference carried, in
// whatever order the releases come.
func TestAckRefWorstStatus(t *testing.T) {
	tests := [][]AckStatus{
		{Delivered},
		{Failed},
		{Delivered, Delivered, Delivered},
		{Delivered, Failed, Delivered},
		{Failed, Delivered, Delivered},
		{Delivered, Delivered, Rejected},
		{Rejected, Failed, Delivered},
		{Failed, Rejected, Failed},
	}
	for _, sts := range tests {
		want := Delivered
		for _, s := range sts {
			want = want.Merge(s)
		}
		c := New()
		is := c.NewIssuer()
		is.Assign(0, 0)
		r := is.Issue(0, 10)
		refs := []AckRef{r}
		for range sts[1:] {
			refs = append(refs, r.Clone())
		}
		c.Drain()
		for i, s := range sts {
			refs[i].Release(s)
			if !refs[i].IsZero() {
				t.Fatalf("Release did not clear the reference")
			}
			if i < len(sts)-1 {
				if st := c.Drain(); st.Messages != 0 {
					t.Fatalf("%v: batch resolved after %d of %d releases", sts, i+1, len(sts))
				}
			}
		}
		st := drainOne(t, c)
		if st.Statuses[want] != 1 {
			t.Errorf("%v: resolved with statuses %v, want %v", sts, st.Statuses, want)
		}
	}
}

// TestCloneN checks that CloneN counts n references in one step: the batch
// resolves at the last of its n+1 releases (the n stored copies and the
// reference itself), with the worst status, and not one release before.
func TestCloneN(t *testing.T) {
	for _, n := range []int{1, 2, 7, 10000} {
		c := New()
		is := c.NewIssuer()
		is.Assign(0, 0)
		r := is.Issue(0, 10)
		recs := make([]AckRef, n)
		v := r.CloneN(n)
		for i := range recs {
			recs[i] = v
		}
		c.Drain()
		r.Release(Delivered)
		for i := range recs {
			if st := c.Drain(); st.Messages != 0 {
				t.Fatalf("n=%d: batch resolved after %d of %d releases", n, i+1, n+1)
			}
			s := Delivered
			if i == n/2 {
				s = Rejected
			}
			recs[i].Release(s)
		}
		st := drainOne(t, c)
		if st.Statuses[Rejected] != 1 {
			t.Errorf("n=%d: resolved with statuses %v, want Rejected", n, st.Statuses)
		}
	}
}

func TestAckRefBatch(t *testing.T) {
	c := New()
	is := c.NewIssuer()
	var zero AckRef
	if !zero.IsZero() {
		t.Fatalf("zero AckRef not IsZero")
	}
	e := is.Assign(2, 0)
	first := is.Issue(2, 1)
	first.Release(Delivered)
	r := is.Issue(2, 1)
	cl := r.Clone()
	if r.IsZero() || cl.Batch() != (BatchID{2, e, 1}) || r.Batch() != cl.Batch() {
		t.Fatalf("Batch() = %v, %v", r.Batch(), cl.Batch())
	}
	if is.Epoch(2) != e || is.Epoch(1) != 0 || is.Epoch(100) != 0 {
		t.Fatalf("issuer epochs wrong")
	}
	r.Release(Delivered)
	cl.Release(Delivered)
}

// TestAckSet checks that a set holds references per batch run, not per record,
// releases each held reference exactly once with the set's outcome, and can be
// reused.
func TestAckSet(t *testing.T) {
	c := New()
	is := c.NewIssuer()
	e := is.Assign(0, 0)
	a, b := is.Issue(0, 10), is.Issue(0, 20)
	c.Drain()

	var s AckSet
	for range 1000 {
		r := a.Clone()
		s.Add(&r)
		if !r.IsZero() {
			t.Fatalf("Add did not clear the reference")
		}
	}
	rb := b.Clone()
	s.Add(&rb)
	ra := a.Clone()
	s.Add(&ra) // a again after b: a new run
	if s.Len() != 3 || s.Refs() != 1002 {
		t.Fatalf("Len %d Refs %d, want 3 1002", s.Len(), s.Refs())
	}
	var ids []BatchID
	s.Batches(func(id BatchID) { ids = append(ids, id) })
	if want := []BatchID{{0, e, 0}, {0, e, 1}, {0, e, 0}}; !slices.Equal(ids, want) {
		t.Fatalf("Batches = %v, want %v", ids, want)
	}

	var o AckSet
	rb2 := b.Clone()
	o.Add(&rb2) // s ends with a run of a: b starts a new one
	ra2 := a.Clone()
	o.Add(&ra2)
	s.Merge(&o)
	if o.Len() != 0 || s.Len() != 5 || s.Refs() != 1004 {
		t.Fatalf("after Merge: o.Len %d s.Len %d s.Refs %d", o.Len(), s.Len(), s.Refs())
	}
	var p AckSet
	ra3 := a.Clone()
	p.Add(&ra3)
	s.Merge(&p) // s ends with a: merges into that entry
	if s.Len() != 5 || s.Refs() != 1005 {
		t.Fatalf("after merging a run of the last batch: Len %d Refs %d", s.Len(), s.Refs())
	}

	a.Release(Delivered)
	b.Release(Delivered)
	if st := c.Drain(); st.Messages != 0 {
		t.Fatalf("batches resolved while a set still holds them: %+v", st)
	}
	s.Ack()
	if s.Len() != 0 || s.Refs() != 0 {
		t.Fatalf("set not empty after Ack")
	}
	st := c.Drain()
	// Ack releases in the order added: b's last run comes before a's.
	if st.Messages != 2 || st.Outcome(Buffered) != 1 || st.Outcome(Advanced) != 1 {
		t.Fatalf("Drain after Ack = %+v", st)
	}
	if got := c.Committable(nil); len(got) != 1 || got[0].Position != 20 {
		t.Fatalf("Committable = %v, want position 20", got)
	}

	// Reuse: the set keeps its capacity and works again, here with a failure.
	capBefore := cap(s.entries)
	d := is.Issue(0, 30)
	s.Add(&d)
	s.Fail(Rejected)
	if cap(s.entries) != capBefore {
		t.Errorf("reused set reallocated: cap %d, was %d", cap(s.entries), capBefore)
	}
	if st := drainOne(t, c); st.Statuses[Rejected] != 1 {
		t.Fatalf("Fail(Rejected) resolved with %v", st.Statuses)
	}
	if s, _ := c.State(0); s.Watermark != 20 || !s.Blocked {
		t.Fatalf("watermark moved past a rejected batch: %+v", s)
	}
}

// TestAckSetFailIsWorst checks that a set's failure wins over a delivery by
// another holder of the same batch: a sink error must never be masked by a
// second sink that succeeded.
func TestAckSetFailIsWorst(t *testing.T) {
	c := New()
	is := c.NewIssuer()
	is.Assign(0, 0)
	r := is.Issue(0, 10)
	var sinkA, sinkB AckSet
	ra := r.Clone()
	sinkA.Add(&ra)
	sinkB.Add(&r)
	sinkA.Fail(Failed)
	sinkB.Ack()
	if st := drainOne(t, c); st.Statuses[Failed] != 1 || st.Outcome(FailedBatch) != 1 {
		t.Fatalf("Drain = %+v, want one failed batch", st)
	}
}
