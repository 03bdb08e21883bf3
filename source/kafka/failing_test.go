package kafka_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/internal/testkit/kafkatest"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/source/kafka"
)

var _ pipeline.FailureReporter = (*kafka.Source)(nil)

// Guarantee: a source whose cluster went away reports it as a failure
// (pipeline.FailureReporter, which /readyz, /debug/stalls and the status
// read), though the client retries by itself and Poll returns nothing: an
// idle source, everything read, was seen as healthy before. Once the broker
// answers again the failure clears and what was produced meanwhile is read.
func TestUnreachableClusterIsFailing(t *testing.T) {
	c := kafkatest.Fake(t, "t", 1)
	unreachableClusterIsFailing(t, c.ListenAddrs(), "t")
}

// unreachableClusterIsFailing is TestUnreachableClusterIsFailing's run with
// brokers, whose topic has one partition.
func unreachableClusterIsFailing(t *testing.T, brokers []string, topic string) {
	ctx := testCtx(t)
	px := kafkatest.NewProxy(t, brokers[0])
	cl := kafkatest.Client(t, brokers)
	kafkatest.Produce(ctx, t, cl, topic, 1, 10)
	src, h := openSource(ctx, t, []string{px.Addr}, "g-"+topic, topic)
	loopCtx, stop := context.WithCancel(ctx)
	wait := kafkatest.PollLoop(loopCtx, src, h)
	defer func() {
		stop()
		if err := wait(); err != nil {
			t.Error(err)
		}
	}()
	if err := h.WaitFor(ctx, "10 records", func() bool { return h.Count() == 10 }); err != nil {
		t.Fatal(err)
	}
	if since, n, err := src.Failing(); !since.IsZero() || err != nil {
		t.Fatalf("failing since %v (%d attempts): %v; want healthy while the broker answers", since, n, err)
	}

	down := time.Now()
	px.Down()
	waitFailing(t, src, func(since time.Time, n int, err error) bool {
		return !since.IsZero() && n >= 2 && err != nil && strings.Contains(err.Error(), "connection refused") &&
			strings.Contains(err.Error(), "source in")
	}, "failing with a refused dial, named")
	since, n, err := src.Failing()
	t.Logf("failing %v after the broker went away (%d attempts): %v", time.Since(down).Round(time.Millisecond), n, err)
	if since.Before(down) {
		t.Errorf("failing since %v, before the broker went away at %v", since, down)
	}

	kafkatest.Produce(ctx, t, cl, topic, 1, 10)
	px.Up()
	if err := h.WaitFor(ctx, "the 10 records produced meanwhile", func() bool { return h.Count() == 20 }); err != nil {
		t.Fatal(err)
	}
	waitFailing(t, src, func(since time.Time, _ int, err error) bool { return since.IsZero() && err == nil }, "healthy again")
}

// waitFailing polls src.Failing until ok holds, for up to 30 s.
func waitFailing(t *testing.T, src *kafka.Source, ok func(time.Time, int, error) bool, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		since, n, err := src.Failing()
		if ok(since, n, err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not %s within 30s: failing since %v, %d attempts, %v", what, since, n, err)
		}
		time.Sleep(20 * time.Millisecond) // polling the client's view
	}
}
