package checkpoint

import (
	"reflect"
	"slices"
	"testing"
)

// TestCheckpointerApply drives Checkpointer.Apply with hand-made messages and
// checks every ResolveOutcome, including the ones that can only come from a
// broken or stale sender. The guarantee is invariant 3 across rebalances: only
// a message of a partition's current epoch ever touches its tracker.
func TestCheckpointerApply(t *testing.T) {
	c := New()
	is := c.NewIssuer()
	e1 := is.Assign(0, 100) // p0: epoch 1
	e2 := is.Assign(2, 0)   // p2: epoch 2; p1 exists but was never assigned
	if st := c.Drain(); st.Assigned != 2 {
		t.Fatalf("Drain after two assigns: %+v", st)
	}
	msg := func(p Partition, e Epoch, seq uint64, pos Position, s AckStatus) AckMsg {
		return AckMsg{ID: BatchID{Partition: p, Epoch: e, Seq: seq}, Position: pos, Status: s}
	}
	steps := []struct {
		name string
		m    AckMsg
		want ResolveOutcome
	}{
		{"head delivered", msg(0, e1, 0, 110, Delivered), Advanced},
		{"behind a gap", msg(0, e1, 2, 130, Delivered), Buffered},
		{"failed", msg(0, e1, 3, 140, Failed), FailedBatch},
		{"behind a failure", msg(0, e1, 4, 150, Delivered), Blocked},
		{"repeated", msg(0, e1, 0, 110, Delivered), Duplicate},
		{"repeated buffered", msg(0, e1, 2, 130, Delivered), Duplicate},
		{"rejected", msg(2, e2, 0, 5, Rejected), FailedBatch},
		{"epoch of another partition", msg(2, e1, 0, 5, Delivered), Stale},
		{"epoch zero", msg(0, 0, 1, 120, Delivered), Impossible},
		{"epoch never assigned", msg(0, e2+1, 1, 120, Delivered), Impossible},
		{"partition never assigned", msg(1, e1, 0, 5, Delivered), Impossible},
		{"partition out of range", msg(9, e1, 0, 5, Delivered), Impossible},
		{"invalid status", msg(0, e1, 1, 120, AckStatus(7)), Impossible},
		{"behind the watermark", msg(0, e1, 1, 99, Delivered), Impossible},
		{"far ahead", msg(0, e1, 1+maxWindow, 1<<40, Delivered), Impossible},
		{"fills the gap", msg(0, e1, 1, 120, Delivered), Advanced},
	}
	for _, s := range steps {
		if got := c.Apply(s.m); got != s.want {
			t.Errorf("%s: Apply(%+v) = %v, want %v", s.name, s.m, got, s.want)
		}
	}
	st, ok := c.State(0)
	want := PartitionState{
		Partition: 0, Epoch: e1, Watermark: 130, Committed: 100, Next: 3, Buffered: 2,
		Failed: true, FailedSeq: 3, FailedStatus: Failed, Blocked: true,
	}
	if !ok || st != want {
		t.Errorf("State(0) = %+v, %v\nwant %+v", st, ok, want)
	}
	if _, ok := c.State(1); ok {
		t.Errorf("State(1) ok for a partition never assigned")
	}
	if _, ok := c.State(42); ok {
		t.Errorf("State(42) ok for a partition out of range")
	}
}

// TestCheckpointerCommit checks the commit cycle: Committable offers only
// progress, a commit that failed is offered again (with any further progress),
// and MarkCommitted ignores commits of an epoch that has ended.
func TestCheckpointerCommit(t *testing.T) {
	c := New()
	is := c.NewIssuer()
	e0 := is.Assign(0, 0)
	e1 := is.Assign(1, 1000)
	refs := []AckRef{is.Issue(0, 10), is.Issue(0, 20), is.Issue(1, 1010), is.Issue(0, 30)}
	c.Drain()
	if got := c.Committable(nil); len(got) != 0 {
		t.Fatalf("Committable before any delivery: %v", got)
	}

	refs[0].Release(Delivered)
	refs[2].Release(Delivered)
	c.Drain()
	got := c.Committable(nil)
	want := []Commit{{0, e0, 10}, {1, e1, 1010}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Committable = %v, want %v", got, want)
	}

	// The source failed to commit: nothing is marked, and the next call offers
	// the same positions plus whatever progressed since.
	refs[1].Release(Delivered)
	c.Drain()
	dst := make([]Commit, 0, 4)
	got = c.Committable(dst)
	want = []Commit{{0, e0, 20}, {1, e1, 1010}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Committable after a failed commit = %v, want %v", got, want)
	}
	if &got[0] != &dst[:1][0] {
		t.Errorf("Committable did not append to dst")
	}

	// This time the commit succeeds.
	c.MarkCommitted(got)
	if got := c.Committable(nil); len(got) != 0 {
		t.Fatalf("Committable after MarkCommitted: %v", got)
	}
	if st, _ := c.State(0); st.Committed != 20 {
		t.Errorf("State(0).Committed = %d, want 20", st.Committed)
	}

	// A commit confirmed late, for an older position or a past epoch, changes
	// nothing; nor does one for a partition out of range.
	refs[3].Release(Delivered)
	c.Drain()
	c.MarkCommitted([]Commit{{0, e0, 15}, {0, e0 + 100, 30}, {7, e0, 30}})
	if got, want := c.Committable(nil), []Commit{{0, e0, 30}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Committable after stale MarkCommitted = %v, want %v", got, want)
	}
	// A rewind at the watermark keeps the last confirmed commit (20), so the
	// old epoch's uncommitted progress is still offered, under the new epoch,
	// before the new epoch delivers anything. A confirmation of the old epoch
	// does not count for it.
	e0b := is.Assign(0, 30)
	c.Drain()
	c.MarkCommitted([]Commit{{0, e0, 30}})
	if got, want := c.Committable(nil), []Commit{{0, e0b, 30}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Committable after re-assign at the watermark = %v, want %v", got, want)
	}
	c.MarkCommitted([]Commit{{0, e0b, 30}})
	if got := c.Committable(nil); len(got) != 0 {
		t.Fatalf("Committable after confirming the new epoch's commit: %v", got)
	}
	r := is.Issue(0, 40)
	r.Release(Delivered)
	c.Drain()
	c.MarkCommitted([]Commit{{0, e0, 40}}) // the old epoch's commit must not count
	if got, want := c.Committable(nil), []Commit{{0, e0b, 40}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Committable after a past epoch's MarkCommitted = %v, want %v", got, want)
	}
}

// TestCheckpointerRevoke checks the revoke path: a revoked partition keeps
// applying its epoch's resolutions until Drained, its final watermark is
// committable, and after Forget its late acknowledgements are Stale (the race
// that lost commits in Redpanda Connect, connect#4477).
func TestCheckpointerRevoke(t *testing.T) {
	c := New()
	is := c.NewIssuer()
	e := is.Assign(3, 0)
	a, b, d := is.Issue(3, 10), is.Issue(3, 20), is.Issue(3, 30)
	is.Revoke(3)
	is.Revoke(3) // a second revoke does nothing
	is.Revoke(5) // nor does revoking what was never assigned
	if is.Epoch(3) != 0 {
		t.Fatalf("issuer Epoch(3) = %d after Revoke", is.Epoch(3))
	}
	st := c.Drain()
	if st.Assigned != 1 || st.Revoked != 1 {
		t.Fatalf("Drain = %+v, want one assign and one revoke", st)
	}
	if s, _ := c.State(3); !s.Closing || s.Drained || c.Drained(3) {
		t.Fatalf("after revoke with 3 batches in flight: %+v", s)
	}
	b.Release(Delivered)
	a.Release(Delivered)
	c.Drain()
	if c.Drained(3) {
		t.Fatalf("Drained with one batch in flight")
	}
	if got, want := c.Committable(nil), []Commit{{3, e, 20}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Committable of a closing partition = %v, want %v", got, want)
	}
	d.Release(Failed)
	c.Drain()
	if !c.Drained(3) {
		t.Fatalf("not Drained after every batch resolved")
	}
	s, _ := c.State(3)
	if !s.Drained || !s.Closing || s.Watermark != 20 || !s.Blocked {
		t.Fatalf("final state %+v", s)
	}
	c.MarkCommitted(c.Committable(nil))
	c.Forget(3)
	c.Forget(99) // out of range: nothing to forget
	if _, ok := c.State(3); ok || c.Drained(3) || c.Drained(99) {
		t.Fatalf("partition still visible after Forget")
	}
	if got := c.Apply(AckMsg{ID: BatchID{3, e, 2}, Position: 30}); got != Stale {
		t.Fatalf("late acknowledgement after Forget: %v, want stale", got)
	}
	if got := c.Committable(nil); len(got) != 0 {
		t.Fatalf("Committable after Forget: %v", got)
	}
}

// TestCheckpointerRevokeOldEpoch checks that a revoke that arrives for an epoch
// that already ended does not close the new one.
func TestCheckpointerRevokeOldEpoch(t *testing.T) {
	c := New()
	is := c.NewIssuer()
	e1 := is.Assign(0, 0)
	is.Assign(0, 0)
	c.Drain()
	c.revoke(0, e1, 0) // as if a revoke of e1 were queued after the new assign
	if s, _ := c.State(0); s.Closing {
		t.Fatalf("revoke of epoch %d closed epoch %d", e1, s.Epoch)
	}
}

// TestCheckpointerStaleAfterReassign checks that acknowledgements in flight
// when a partition is re-assigned (a rebalance, a rewind) can never move the
// new epoch's watermark, whatever their status and position.
func TestCheckpointerStaleAfterReassign(t *testing.T) {
	c := New()
	is := c.NewIssuer()
	e1 := is.Assign(0, 0)
	old := []AckRef{is.Issue(0, 10), is.Issue(0, 20), is.Issue(0, 30)}
	old[1].Release(Failed)
	c.Drain()

	e2 := is.Assign(0, 0) // rewind to the watermark
	fresh := is.Issue(0, 10)
	if fresh.Batch() != (BatchID{0, e2, 0}) || e2 <= e1 {
		t.Fatalf("new epoch batch %v, epochs %d then %d", fresh.Batch(), e1, e2)
	}
	// The old epoch's batches 0 and 2 resolve after the re-assign: they carry
	// the same sequence numbers and positions as the new epoch's batches.
	old[0].Release(Delivered)
	old[2].Release(Delivered)
	st := c.Drain()
	if st.Outcome(Stale) != 2 || st.Messages != 2 || st.Assigned != 1 {
		t.Fatalf("Drain = %+v, want two stale messages", st)
	}
	if st.Statuses != [numStatuses]int{} {
		t.Errorf("stale messages counted in Statuses: %v", st.Statuses)
	}
	s, _ := c.State(0)
	if s.Epoch != e2 || s.Watermark != 0 || s.Next != 0 || s.Failed {
		t.Fatalf("new epoch touched by stale acks: %+v", s)
	}
	fresh.Release(Delivered)
	c.Drain()
	if got, want := c.Committable(nil), []Commit{{0, e2, 10}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Committable = %v, want %v", got, want)
	}
}

// TestCheckpointerAssignOrder checks that an epoch older than the partition's
// last one is a broken invariant, not something to paper over.
func TestCheckpointerAssignOrder(t *testing.T) {
	c := New()
	c.assign(0, 5, 0)
	mustPanic(t, "partition 0 assigned epoch 5 after epoch 5", func() { c.assign(0, 5, 0) })
	mustPanic(t, "partition 0 assigned epoch 4 after epoch 5", func() { c.assign(0, 4, 0) })
}

// TestCheckpointerStates lists assigned partitions only, in partition order.
func TestCheckpointerStates(t *testing.T) {
	c := New()
	is := c.NewIssuer()
	is.Assign(4, 40)
	is.Assign(1, 10)
	is.Assign(2, 20)
	c.Drain()
	c.Forget(2)
	var ps []Partition
	for _, s := range c.States(nil) {
		ps = append(ps, s.Partition)
	}
	if !slices.Equal(ps, []Partition{1, 4}) {
		t.Errorf("States partitions = %v, want [1 4]", ps)
	}
}

// TestDrainStats checks the counters a Drain reports and DrainStats.Add.
func TestDrainStats(t *testing.T) {
	c := New()
	is := c.NewIssuer()
	is.Assign(0, 0)
	refs := []AckRef{is.Issue(0, 1), is.Issue(0, 2), is.Issue(0, 3), is.Issue(0, 4)}
	refs[1].Release(Delivered)
	refs[2].Release(Rejected)
	refs[3].Release(Delivered)
	refs[0].Release(Delivered)
	is.Revoke(0)
	got := c.Drain()
	want := DrainStats{Messages: 4, Assigned: 1, Revoked: 1}
	want.Outcomes[Buffered] = 1
	want.Outcomes[FailedBatch] = 1
	want.Outcomes[Blocked] = 1
	want.Outcomes[Advanced] = 1
	want.Statuses[Delivered] = 3
	want.Statuses[Rejected] = 1
	if got != want {
		t.Fatalf("Drain = %+v\nwant %+v", got, want)
	}
	if again := c.Drain(); again != (DrainStats{}) {
		t.Fatalf("second Drain = %+v, want nothing", again)
	}
	var sum DrainStats
	sum.Add(got)
	sum.Add(got)
	sum.Add(DrainStats{Leaked: 2})
	if sum.Messages != 8 || sum.Outcome(Blocked) != 2 || sum.Statuses[Delivered] != 6 || sum.Leaked != 2 || sum.Assigned != 2 || sum.Revoked != 2 {
		t.Fatalf("Add: %+v", sum)
	}
}

// TestPartitionTablesFollowHighestPartition checks that the Checkpointer and
// the issuer hold one table entry per partition up to the highest assigned, in
// whatever order partitions arrive: a source with 11 partitions costs 11
// entries, not more. Calls about a partition beyond the tables (queries,
// messages, confirmations, a revoke of what was never assigned) do not grow
// them: only an assignment may.
func TestPartitionTablesFollowHighestPartition(t *testing.T) {
	c := New()
	is := c.NewIssuer()
	var high Partition
	for _, p := range []Partition{0, 1, 2, 5, 3, 9, 4, 10, 6} {
		is.Assign(p, 0)
		c.Drain()
		high = max(high, p)
		if len(c.parts) != int(high)+1 || len(is.parts) != int(high)+1 {
			t.Fatalf("after assigning %d: Checkpointer holds %d entries, issuer %d; want %d each",
				p, len(c.parts), len(is.parts), high+1)
		}
	}
	for _, p := range []Partition{high + 1, 1000} {
		c.Apply(AckMsg{ID: BatchID{Partition: p, Epoch: 1}, Position: 10})
		c.Drained(p)
		c.State(p)
		c.Forget(p)
		c.MarkCommitted([]Commit{{Partition: p, Epoch: 1, Position: 10}})
		is.Epoch(p)
		is.Revoke(p)
		c.Drain()
		if len(c.parts) != int(high)+1 || len(is.parts) != int(high)+1 {
			t.Fatalf("calls about partition %d grew the tables: Checkpointer %d entries, issuer %d; want %d each",
				p, len(c.parts), len(is.parts), high+1)
		}
	}
}
