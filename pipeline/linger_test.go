package pipeline_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/sink/blackhole"
)

// flushCount counts a sink's successful flushes.
type flushCount struct {
	*writeSignal
	flushes atomic.Int32
}

func (f *flushCount) Flush(ctx context.Context) error {
	err := f.writeSignal.Flush(ctx)
	if err == nil {
		f.flushes.Add(1)
	}
	return err
}

// idleAfter is a source with n batches of 10 records, which then waits for
// more that never come. (A source held at its in-flight limits is not idle
// input: its sinks are asked to flush the groups that hold it, pressed.)
func idleAfter(n int) *feedSource {
	src := &feedSource{feed: make(chan feedBatch, n), seen: make(chan int64, 64)}
	for range n {
		src.feed <- feedBatch{n: 10}
	}
	return src
}

// Guarantee: with a Linger, a sink flushes its partial group once its input
// has been idle for the Linger, not before, and long before MaxAge; the
// flushed records are then acknowledged and committed like any other group.
func TestLingerFlushesOnlyAfterIdleInput(t *testing.T) {
	// A source that has two batches and then waits for more: after the
	// second batch the input is idle.
	src := idleAfter(2)
	sink := &flushCount{writeSignal: &writeSignal{Sink: blackhole.New(), n: 2, done: make(chan struct{})}}
	sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: sink,
		Batch: pipeline.BatchSettings{MaxRecords: 1 << 20, MaxAge: time.Hour, Linger: 50 * time.Millisecond}})
	clock := newFakeClock()
	stall := make(chan time.Time)
	linger := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Run(ctx, sp, quiet, pipeline.WithClock(clock.now, stall), pipeline.WithLingerTicks(linger))
	}()
	<-sink.done // both batches are in the group; nothing more can come

	// The sink goroutine takes a tick only after it finished the one before,
	// so a second tick means the first was fully handled.
	tick := func() {
		linger <- clock.now()
		linger <- clock.now()
	}
	tick()
	clock.add(49 * time.Millisecond)
	tick()
	if n := sink.flushes.Load(); n != 0 {
		t.Fatalf("%d flushes after 49ms of idle input with a 50ms linger, want 0", n)
	}
	clock.add(time.Millisecond)
	tick()
	if n := sink.flushes.Load(); n != 1 {
		t.Fatalf("%d flushes after 50ms of idle input with a 50ms linger, want 1", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A Linger is off by default: without one, idle input does not flush.
func TestNoLingerByDefault(t *testing.T) {
	src := idleAfter(2)
	sink := &flushCount{writeSignal: &writeSignal{Sink: blackhole.New(), n: 2, done: make(chan struct{})}}
	sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: sink,
		Batch: pipeline.BatchSettings{MaxRecords: 1 << 20, MaxAge: time.Hour}})
	clock := newFakeClock()
	stall := make(chan time.Time)
	linger := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Run(ctx, sp, quiet, pipeline.WithClock(clock.now, stall), pipeline.WithLingerTicks(linger))
	}()
	<-sink.done
	clock.add(time.Minute)
	linger <- clock.now()
	linger <- clock.now()
	if n := sink.flushes.Load(); n != 0 {
		t.Fatalf("%d flushes of idle input without a linger, want 0", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
