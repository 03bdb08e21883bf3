package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-etl/weir/internal/testkit/kafkatest"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/record"
)

// A partition that was assigned but never handed to the runtime (nothing was
// ever read from it) is revoked in a rebalance; the partitions the member
// keeps must go on committing, and a rewind of them must still work.
//
// A 12-partition topic has data in partitions 0-5 only. Member A reads them
// alone; member B joins and is given empty partitions. More data arrives in
// 0-5. Every partition's committed offset must reach its end, in particular
// that of the partition the runtime numbered 0 (the first A handed out), and
// a failed write of that partition afterwards must be rewound and replayed.
//
// Before the fix, revoking a never-handed-out partition deleted the runtime
// id 0 from the source's map (the zero value of the id it had never been
// given): A's commits of its id-0 partition were then skipped without a word,
// and the rewind failed with "seek of partition 0, which this member does not
// own", stopping A.
func TestPipelineEmptyPartitionsRevoked(t *testing.T) {
	t.Parallel() // waits on group rebalances; overlaps with the other waiting tests
	ctx := testCtx(t)
	const parts, data, wave = 12, 6, 1000
	c := newKafkaCluster(t, parts)
	for p := range int32(data) {
		produceSeq(ctx, t, c.cl, "t", p, 0, wave)
	}
	ends := func(n int64) []int64 {
		out := make([]int64, parts)
		for p := range out {
			out[p] = -1
			if p < data {
				out[p] = n
			}
		}
		return out
	}

	// A fails its first write of records of its id-0 partition at or after
	// offset 2*wave, once, so that the runtime rewinds it.
	var mu sync.Mutex
	var failName string // the partition to fail, once chosen
	failed := make(chan struct{})
	onWrite := func(recs []record.Record) error {
		mu.Lock()
		defer mu.Unlock()
		if failName == "" {
			return nil
		}
		for i := range recs {
			if recs[i].Origin.Partition == failName && recs[i].Origin.Offset >= 2*wave {
				failName = ""
				close(failed)
				return errors.New("test sink: this write fails once")
			}
		}
		return nil
	}
	opts := memberOpts{group: "g", topic: "t", onWrite: onWrite,
		checkpoint: pipeline.CheckpointSettings{CommitInterval: 20 * time.Millisecond}}
	a := startMember(ctx, t, c.addrs, opts)
	waitCommitted(ctx, t, c.cl, "g", "t", ends(wave)...)
	first := a.rec.Find("assign", "")[0].Name // the runtime's partition 0

	opts.onWrite = nil
	b := startMember(ctx, t, c.addrs, opts)
	waitGroupStable(ctx, t, c.cl, "g", 2)
	moved := b.rec // B is assigned partitions when their data arrives
	for p := range int32(data) {
		produceSeq(ctx, t, c.cl, "t", p, wave, wave)
	}
	waitCommittedWithin(ctx, t, c.cl, "g", "t", 20*time.Second, ends(2*wave)...)
	if len(moved.Find("assign", first)) != 0 {
		t.Skipf("B was given %s, the partition A numbered 0: the scenario needs A to keep it", first)
	}

	// A rewind of A's id-0 partition: its next write fails, the runtime
	// seeks it back, and the records are written again.
	mu.Lock()
	failName = first
	mu.Unlock()
	var p0 int32
	fmt.Sscanf(strings.TrimPrefix(first, "t/"), "%d", &p0)
	produceSeq(ctx, t, c.cl, "t", p0, 2*wave, 10)
	waitClosed(ctx, t, "the failed write", failed)
	want := ends(2 * wave)
	want[p0] = 2*wave + 10
	waitCommittedWithin(ctx, t, c.cl, "g", "t", 20*time.Second, want...)
	if seeks := a.rec.Find("seek", first); len(seeks) == 0 {
		t.Fatalf("no seek of %s after its failed write; events %v", first, a.rec.Events())
	}
	w := written(a.mem)[first]
	for off := int64(2 * wave); off < 2*wave+10; off++ {
		if w[off] == 0 {
			t.Errorf("%s offset %d was never written", first, off)
		}
	}
	if err := a.stop(ctx); err != nil {
		t.Fatalf("A: %v", err)
	}
	if err := b.stop(ctx); err != nil {
		t.Fatalf("B: %v", err)
	}
}

// waitGroupStable polls the group until it is stable with n members, each
// with an assignment.
func waitGroupStable(ctx context.Context, t *testing.T, cl *kgo.Client, group string, n int) {
	t.Helper()
	adm := kadm.NewClient(cl)
	var last string
	for {
		gs, err := adm.DescribeGroups(ctx, group)
		if err == nil {
			g := gs[group]
			last = fmt.Sprintf("%s with %d members", g.State, len(g.Members))
			ok := g.Err == nil && g.State == "Stable" && len(g.Members) == n
			for _, m := range g.Members {
				if ca, _ := m.Assigned.AsConsumer(); ca == nil || len(ca.Topics) == 0 {
					ok = false
				}
			}
			if ok {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group %s never stable with %d members: %s", group, n, last)
		case <-time.After(20 * time.Millisecond): // polling an external process
		}
	}
}

// waitCommittedWithin is waitCommitted with a deadline of its own, so that a
// commit that never comes fails the test with the offsets it reached.
func waitCommittedWithin(ctx context.Context, t *testing.T, cl *kgo.Client, group, topic string, d time.Duration, want ...int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	waitCommitted(ctx, t, cl, group, topic, want...)
}

var _ = kafkatest.Committed
