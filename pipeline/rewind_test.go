package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/record"
)

// idleSource is one partition of n records, served in batches of ten. Once
// it has nothing to serve, Poll blocks until its context is done, as a Kafka
// consumer does on a topic that receives nothing new. With stubborn set it
// holds its last batch back and returns it, with no error, from the first Poll
// whose context is cancelled: a source that had data by the time it noticed.
type idleSource struct {
	n        int64
	stubborn bool
	idle     chan struct{} // closed the first time Poll waits for data

	h        connector.Host
	id       checkpoint.Partition
	next     int64 // poller only
	idleOnce sync.Once

	mu          sync.Mutex
	seeks       []int64
	interrupted int   // Polls that returned because their context was cancelled
	heldBack    bool  // the held-back batch was returned by an interrupted Poll
	committed   int64 // highest position committed
	done        chan struct{}
}

func newIdleSource(n int64, stubborn bool) *idleSource {
	return &idleSource{n: n, stubborn: stubborn, idle: make(chan struct{}), done: make(chan struct{})}
}

func (s *idleSource) Open(_ context.Context, h connector.Host) error {
	s.h = h
	s.id = h.Assign("p", 0)
	return nil
}

func (s *idleSource) Poll(ctx context.Context, b *connector.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	limit := s.n
	if s.stubborn && !s.heldBack {
		limit = s.n - 10
	}
	s.mu.Unlock()
	if s.next < limit {
		s.fill(b)
		return nil
	}
	s.idleOnce.Do(func() { close(s.idle) })
	<-ctx.Done()
	s.mu.Lock()
	s.interrupted++
	s.mu.Unlock()
	if s.stubborn && s.next < s.n {
		s.fill(b)
		s.mu.Lock()
		s.heldBack = true
		s.mu.Unlock()
		return nil
	}
	return ctx.Err()
}

func (s *idleSource) fill(b *connector.Batch) {
	b.Partition = s.id
	for range 10 {
		r := record.New(fmt.Appendf(nil, `{"seq":%d}`, s.next))
		r.Origin.Offset = s.next
		b.Records = append(b.Records, r)
		s.next++
	}
	b.End = checkpoint.Position(s.next)
}

func (s *idleSource) Commit(_ context.Context, cs []connector.Commit) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range cs {
		if int64(c.Position) > s.committed {
			s.committed = int64(c.Position)
			if s.committed == s.n {
				close(s.done)
			}
		}
	}
	return nil
}

func (s *idleSource) Seek(_ context.Context, _ checkpoint.Partition, pos checkpoint.Position) error {
	s.mu.Lock()
	s.seeks = append(s.seeks, int64(pos))
	s.mu.Unlock()
	s.next = int64(pos) // Seek runs on the polling goroutine, between Polls
	return nil
}

func (s *idleSource) Close(context.Context) error { return nil }

// Guarantee: a failed group is replayed even when its partition receives
// nothing new. The rewind must interrupt a Poll that waits for data; before,
// the poller applied rewinds only between two Polls, and the watermark stayed
// behind the failure until the next record arrived.
func TestRewindInterruptsIdlePoll(t *testing.T) {
	for _, stubborn := range []bool{false, true} {
		t.Run(fmt.Sprintf("stubborn=%v", stubborn), func(t *testing.T) {
			rewindIdle(t, stubborn)
		})
	}
}

func rewindIdle(t *testing.T, stubborn bool) {
	const n = 40
	src := newIdleSource(n, stubborn)
	mem := &conformance.MemSink{}
	var mu sync.Mutex
	failed := 0
	fs := &conformance.FaultSink{Sink: mem,
		OnWrite: func(recs []record.Record) error {
			if recs[0].Origin.Offset != 10 {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			if failed >= 2 { // the write and its one retry
				return nil
			}
			failed++
			if failed == 1 {
				// Fail only once the source waits for data, so the rewind
				// must wake it.
				<-src.idle
			}
			return errors.New("test sink: this group fails")
		}}
	sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: fs, Batch: pipeline.BatchSettings{MaxRecords: 10}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- pipeline.Run(runCtx, sp, quiet) }()
	select {
	case <-src.done:
	case err := <-errc:
		t.Fatalf("pipeline stopped before committing %d: %v", n, err)
	case <-ctx.Done():
		src.mu.Lock()
		defer src.mu.Unlock()
		t.Fatalf("committed %d after %v, want %d; seeks %v: the rewind waited for new data", src.committed, 20*time.Second, n, src.seeks)
	}
	stop()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if len(src.seeks) != 1 || src.seeks[0] != 10 {
		t.Errorf("seeks %v, want one to 10, the failed group's start", src.seeks)
	}
	if src.interrupted == 0 {
		t.Error("no Poll was interrupted: the test did not wait for an idle partition")
	}
	if stubborn && !src.heldBack {
		t.Error("the interrupted Poll did not return its batch: the test did not cover a batch returned despite the cancellation")
	}
	m := seen(t, mem.Values())
	for i := range n {
		if m[i] == 0 {
			t.Errorf("record %d never written", i)
		}
	}
}
