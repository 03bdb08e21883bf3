//go:build integration

package kafka_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/weir-etl/weir/internal/testkit/kafkatest"
)

// Against a real broker: a member consumes part of a multi-partition topic and
// commits what it delivered; after a restart the next member resumes at
// exactly the committed offsets, and together they read every record.
func TestIntegrationResumeFromCommitted(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	ctx := testCtx(t)
	cl := kafkatest.Client(t, brokers)
	const parts, perPart = 6, 2000
	topic := kafkatest.CreateTopic(ctx, t, cl, "weir-resume", parts)
	kafkatest.Produce(ctx, t, cl, topic, parts, perPart)
	group := "weir-resume-" + topic

	srcA, hA := openSource(ctx, t, brokers, group, topic)
	loopCtx, stop := context.WithCancel(ctx)
	waitA := kafkatest.PollLoop(loopCtx, srcA, hA)
	if err := hA.WaitFor(ctx, "half the records", func() bool { return hA.Count() >= parts*perPart/2 }); err != nil {
		t.Fatal(err)
	}
	stop()
	if err := waitA(); err != nil {
		t.Fatal(err)
	}
	if err := hA.CommitAll(ctx); err != nil {
		t.Fatal(err)
	}
	committed := kafkatest.Committed(ctx, t, cl, group, topic, parts)
	if err := srcA.Close(ctx); err != nil {
		t.Fatal(err)
	}

	srcB, hB := openSource(ctx, t, brokers, group, topic)
	loopCtx, stop = context.WithCancel(ctx)
	waitB := kafkatest.PollLoop(loopCtx, srcB, hB)
	want := 0
	for _, c := range committed {
		want += perPart - int(max(c, 0))
	}
	if err := hB.WaitFor(ctx, "the rest", func() bool { return hB.Count() >= want }); err != nil {
		t.Fatal(err)
	}
	stop()
	if err := waitB(); err != nil {
		t.Fatal(err)
	}
	for p := 0; p < parts; p++ {
		name := fmt.Sprintf("%s/%d", topic, p)
		a, b := hA.Offsets(name), hB.Offsets(name)
		start := max(committed[p], 0)
		if int64(len(a)) < start {
			t.Errorf("%s: committed %d but the first member read only %d records", name, start, len(a))
		}
		if start < perPart && (len(b) == 0 || b[0] != start) {
			t.Errorf("%s: committed %d, second member started at %v", name, start, b[:min(1, len(b))])
		}
		for i, off := range b {
			if off != start+int64(i) {
				t.Fatalf("%s: second member read offset %d at %d, want contiguous from %d", name, off, i, start)
			}
		}
		if start+int64(len(b)) != perPart {
			t.Errorf("%s: read up to %d, want %d", name, start+int64(len(b)), perPart)
		}
	}
	for _, c := range hB.Calls() {
		if c.Op == "assign" {
			var p int
			fmt.Sscanf(c.Name[len(topic)+1:], "%d", &p)
			if int64(c.Pos) != committed[p] && committed[p] >= 0 {
				t.Errorf("second member assigned %s at %d, committed %d", c.Name, c.Pos, committed[p])
			}
		}
	}
}

// TestUnreachableClusterIsFailing against the real broker, through the
// proxy that rewrites its advertised address.
func TestIntegrationUnreachableClusterIsFailing(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	topic := kafkatest.CreateTopic(testCtx(t), t, kafkatest.Client(t, brokers), "weir-unreachable", 1)
	unreachableClusterIsFailing(t, brokers, topic)
}
