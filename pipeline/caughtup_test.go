package pipeline_test

import (
	"context"
	"testing"
	"time"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/record"
)

// feedSource serves the batches the test sends it, one partition, and waits
// for the next when it has none, as a Kafka consumer does.
type feedSource struct {
	feed chan feedBatch
	next int64
	seen chan int64 // committed positions
}

type feedBatch struct {
	n        int
	caughtUp bool
}

func (s *feedSource) Open(_ context.Context, h connector.Host) error {
	h.Assign("p", 0)
	return nil
}

func (s *feedSource) Poll(ctx context.Context, b *connector.Batch) error {
	select {
	case fb := <-s.feed:
		for range fb.n {
			r := record.New([]byte(`{}`))
			r.Origin.Offset = s.next
			b.Records = append(b.Records, r)
			s.next++
		}
		b.Partition, b.End, b.CaughtUp = 0, checkpoint.Position(s.next), fb.caughtUp
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *feedSource) Commit(_ context.Context, cs []connector.Commit) error {
	for _, c := range cs {
		select {
		case s.seen <- int64(c.Position):
		default:
		}
	}
	return nil
}
func (s *feedSource) Seek(context.Context, connector.Partition, connector.Position) error { return nil }
func (s *feedSource) Close(context.Context) error                                         { return nil }

// waitCommit waits until the source committed want.
func (s *feedSource) waitCommit(t *testing.T, want int64) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case got := <-s.seen:
			if got >= want {
				return
			}
		case <-timeout:
			t.Fatalf("position %d not committed within 30s: the sink's group was not flushed", want)
		}
	}
}

// Guarantee: when a source says it caught up, the sinks flush at once
// instead of waiting for their MaxAge (here an hour), so a backlog's tail is
// written without delay; and they do so at most once per MaxAge, so that a
// trickling input is not written a record at a time.
func TestCaughtUpFlushesAtOncePerMaxAge(t *testing.T) {
	src := &feedSource{feed: make(chan feedBatch), seen: make(chan int64, 64)}
	mem := &conformance.MemSink{}
	writes := make(chan int, 16)
	sink := &conformance.FaultSink{Sink: mem, OnWrite: func(recs []record.Record) error {
		writes <- len(recs)
		return nil
	}}
	sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: sink,
		Batch: pipeline.BatchSettings{MaxRecords: 1 << 20, MaxAge: time.Hour}})
	clock := newFakeClock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(ctx, sp, quiet, pipeline.WithClock(clock.now, nil)) }()

	// A backlog: batches, the last one caught up.
	src.feed <- feedBatch{n: 100}
	src.feed <- feedBatch{n: 100}
	src.feed <- feedBatch{n: 50, caughtUp: true}
	src.waitCommit(t, 250)
	for range 3 {
		<-writes
	}

	// A trickle right after: caught up again within MaxAge, not flushed.
	src.feed <- feedBatch{n: 1, caughtUp: true}
	src.feed <- feedBatch{n: 1}
	<-writes
	<-writes // the second batch reached the sink: the flush request between them was handled
	if got := len(mem.Values()); got != 250 {
		t.Fatalf("%d records durable after a second catch-up within MaxAge, want 250 (the trickle must wait)", got)
	}
	// MaxAge later, a catch-up flushes again.
	clock.add(time.Hour)
	src.feed <- feedBatch{n: 1, caughtUp: true}
	src.waitCommit(t, 253)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
