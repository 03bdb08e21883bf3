package pipeline_test

import (
	"context"
	"fmt"
	goruntime "runtime"
	"sync"
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

// partFeed is feedSource over several partitions: each batch the test sends
// names its partition and its records' values.
type partFeed struct {
	feed chan partBatch
	next map[checkpoint.Partition]int64

	mu        sync.Mutex
	committed map[checkpoint.Partition]int64
	changed   chan struct{} // capacity 1
}

type partBatch struct {
	part     checkpoint.Partition
	values   []string
	caughtUp bool
}

func newPartFeed() *partFeed {
	return &partFeed{feed: make(chan partBatch), next: map[checkpoint.Partition]int64{},
		committed: map[checkpoint.Partition]int64{}, changed: make(chan struct{}, 1)}
}

func (s *partFeed) Open(_ context.Context, h connector.Host) error {
	h.Assign("p0", 0)
	h.Assign("p1", 0)
	return nil
}

func (s *partFeed) Poll(ctx context.Context, b *connector.Batch) error {
	select {
	case fb := <-s.feed:
		for _, v := range fb.values {
			r := record.New([]byte(v))
			r.Origin.Offset = s.next[fb.part]
			b.Records = append(b.Records, r)
			s.next[fb.part]++
		}
		b.Partition, b.End, b.CaughtUp = fb.part, checkpoint.Position(s.next[fb.part]), fb.caughtUp
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *partFeed) Commit(_ context.Context, cs []connector.Commit) error {
	s.mu.Lock()
	for _, c := range cs {
		s.committed[c.Partition] = int64(c.Position)
	}
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
	return nil
}

func (s *partFeed) Seek(context.Context, connector.Partition, connector.Position) error { return nil }
func (s *partFeed) Close(context.Context) error                                         { return nil }

// waitCommitted waits until every partition in want is committed at least
// to its position.
func (s *partFeed) waitCommitted(t *testing.T, want map[checkpoint.Partition]int64) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		s.mu.Lock()
		done := true
		for p, pos := range want {
			done = done && s.committed[p] >= pos
		}
		got := fmt.Sprint(s.committed)
		s.mu.Unlock()
		if done {
			return
		}
		select {
		case <-s.changed:
		case <-timeout:
			t.Fatalf("committed %s, want %v within 30s: a group was left to MaxAge", got, want)
		}
	}
}

// holdTransform passes records on, holding the one whose value is "hold"
// until release is closed.
type holdTransform struct{ release chan struct{} }

func (h *holdTransform) Process(in *record.Record, out []record.Record) ([]record.Record, error) {
	if string(in.Bytes()) == `"hold"` {
		<-h.release
	}
	return append(out, *in), nil
}

// Guarantee: a caught-up flush waits for every batch the source read before
// it, although they went through other workers: here the batch of p1 is
// held in its worker's transform while p0's caught-up batch, and a later
// batch that proves the request reached the sink, pass through the other
// worker. The held records are flushed with the rest when they arrive, not
// left to MaxAge (an hour) in the next group.
func TestCaughtUpFlushWaitsForEveryWorker(t *testing.T) {
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(2)) // two workers: p0 and p1 go through different ones
	src := newPartFeed()
	hold := &holdTransform{release: make(chan struct{})}
	written := make(chan string, 16)
	mem := &conformance.MemSink{}
	sink := &conformance.FaultSink{Sink: mem, OnWrite: func(recs []record.Record) error {
		for i := range recs {
			written <- string(recs[i].Bytes())
		}
		return nil
	}}
	sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"t"}, Sink: sink,
		Batch: pipeline.BatchSettings{MaxRecords: 1 << 20, MaxAge: time.Hour}})
	sp.Transforms = []pipeline.TransformSpec{{Name: "t", Inputs: []string{"gen"}, Transform: hold}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(ctx, sp, quiet) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	src.feed <- partBatch{part: 1, values: []string{`"hold"`}}
	src.feed <- partBatch{part: 0, values: []string{`"a"`}, caughtUp: true}
	src.feed <- partBatch{part: 0, values: []string{`"probe"`}}
	for v := range written {
		if v == `"probe"` {
			break // the request came through p0's worker before it
		}
	}
	close(hold.release)
	src.waitCommitted(t, map[checkpoint.Partition]int64{0: 2, 1: 1})
}
