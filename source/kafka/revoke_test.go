package kafka_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/weir-etl/weir/internal/testkit/kafkatest"
	"github.com/weir-etl/weir/pipeline"
)

// A rebalance gives up all its partitions in one Host.Revoke call, so that
// they drain together under one deadline: with the sink stalled, the
// rebalance waits one drain timeout, not one per partition (the runtime's
// Revoke shares its deadline among the partitions of a call).
//
// Member A holds four partitions, each with a batch stuck behind a held
// write, when member B joins; with an eager balancer the rebalance takes all
// four from A. A must make exactly one Revoke call, naming all four. (Before,
// the source revoked partitions one call at a time: four calls, each waiting
// up to the drain timeout from its own start.)
func TestPipelineRevokeAllInOneCall(t *testing.T) {
	t.Parallel() // waits on group rebalances; overlaps with the other waiting tests
	ctx := testCtx(t)
	const parts = 4
	c := newKafkaCluster(t, parts)
	for p := range int32(parts) {
		produceSeq(ctx, t, c.cl, "t", p, 0, 10)
	}
	g := newGate(true, false)
	a := startMember(ctx, t, c.addrs, memberOpts{group: "g", topic: "t", balancer: "round-robin", onWrite: g.onWrite,
		checkpoint: pipeline.CheckpointSettings{CommitInterval: 20 * time.Millisecond, DrainTimeout: 300 * time.Millisecond}})
	t.Cleanup(g.Release) // before A's own cleanup, which waits for A to stop
	waitClosed(ctx, t, "A's first write to be held", g.held)
	if err := a.rec.WaitFor(ctx, "A assigned every partition", func() bool { return len(a.rec.Find("assign", "")) == parts }); err != nil {
		t.Fatal(err)
	}

	b := startMember(ctx, t, c.addrs, memberOpts{group: "g", topic: "t", balancer: "round-robin",
		checkpoint: pipeline.CheckpointSettings{CommitInterval: 20 * time.Millisecond}})
	if err := a.rec.WaitFor(ctx, "A's revoke", func() bool { return len(a.rec.Find("revoked", "")) == parts }); err != nil {
		t.Fatal(err)
	}
	calls := a.rec.RevokeCalls()
	if len(calls) != 1 {
		t.Fatalf("A revoked in %d calls %v, want one call for the whole rebalance", len(calls), calls)
	}
	got := slices.Sorted(slices.Values(calls[0]))
	if want := []string{"t/0", "t/1", "t/2", "t/3"}; !slices.Equal(got, want) {
		t.Fatalf("A's revoke call named %v, want %v", got, want)
	}
	g.Release()
	waitGroupStable(ctx, t, c.cl, "g", 2)
	if err := a.stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.stop(ctx); err != nil {
		t.Fatal(err)
	}
}

// The same with the source alone and a recording Host: when a second member
// joins, the partitions a cooperative rebalance moves are revoked in one
// call, and a partition never handed out (no record was read from it) is in
// no call: it has no id, and the Host never heard of it.
func TestRevokeOneCallSkipsUnreadPartitions(t *testing.T) {
	t.Parallel() // waits on group rebalances; overlaps with the other waiting tests
	ctx := testCtx(t)
	const parts = 4
	c := kafkatest.Fake(t, "t", parts)
	cl := kafkatest.Client(t, c.ListenAddrs())
	kafkatest.Produce(ctx, t, cl, "t", 2, 5) // partitions 2 and 3 stay empty
	srcA, hA := openSource(ctx, t, c.ListenAddrs(), "g", "t")
	loopCtx, stop := context.WithCancel(ctx)
	defer stop()
	waitA := kafkatest.PollLoop(loopCtx, srcA, hA)
	if err := hA.WaitFor(ctx, "A reads 10", func() bool { return hA.Count() == 10 }); err != nil {
		t.Fatal(err)
	}
	srcB, hB := openSource(ctx, t, c.ListenAddrs(), "g", "t")
	waitB := kafkatest.PollLoop(loopCtx, srcB, hB)
	waitGroupStable(ctx, t, cl, "g", 2)

	// A gave up two partitions; only those it had handed out are revoked,
	// in one call.
	calls := hA.RevokeCalls()
	if len(calls) > 1 {
		t.Fatalf("A revoked in %d calls %v, want at most one", len(calls), calls)
	}
	var revoked []string
	if len(calls) == 1 {
		revoked = calls[0]
	}
	for _, name := range revoked {
		if name != "t/0" && name != "t/1" {
			t.Errorf("A revoked %s, which it never handed out", name)
		}
	}
	// A still commits every partition it holds. (Before, the revoke of a
	// never-handed-out partition took the id 0 of t/0 with it, and A's
	// commits of t/0 were dropped without a word.)
	held := hA.Owned()
	kafkatest.Produce(ctx, t, cl, "t", 2, 5)
	if err := hA.WaitFor(ctx, "A reads the new records of what it holds", func() bool {
		return hA.Count() == 10+5*len(held)
	}); err != nil {
		t.Fatal(err)
	}
	if err := hA.CommitAll(ctx); err != nil {
		t.Fatalf("A's commit of what it holds: %v", err)
	}
	committed := kafkatest.Committed(ctx, t, cl, "g", "t", parts)
	for _, name := range held {
		if p := name[len(name)-1] - '0'; committed[p] != 10 {
			t.Errorf("A holds %s but the group's committed offset is %d, want 10; committed %v", name, committed[p], committed)
		}
	}
	if len(held) == 0 {
		t.Fatal("A holds nothing after the rebalance: the scenario needs it to keep a partition it read")
	}
	stop()
	if err := waitA(); err != nil {
		t.Fatal(err)
	}
	if err := waitB(); err != nil {
		t.Fatal(err)
	}
}
