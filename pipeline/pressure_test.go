package pipeline_test

import (
	"context"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline"
)

// Guarantee: a sink's open group that holds most of what its source may
// have in flight is flushed when the source pauses at its limits, instead of
// at its MaxAge (here an hour, with a clock that never moves): a group that
// cannot fill before the source must stop does not stop the pipeline.
// Before, a filter keeping one record in a thousand (a group of 10,000
// records spread over 10,000 batches, ten times max_in_flight_batches) or a
// max_in_flight_bytes below one group's records read one group's worth of
// input per MaxAge: 10M records took 9.2 s instead of 1.
func TestPausedSourceGetsItsBatchesBack(t *testing.T) {
	const batches, per = 40, 10
	for _, c := range []struct {
		name    string
		sink    func() (connector.Sink, func() int)
		overlap int
	}{
		{"flushing sink", func() (connector.Sink, func() int) {
			m := &conformance.MemSink{}
			return m, func() int { return len(m.Values()) }
		}, 0},
		{"sealing sink", func() (connector.Sink, func() int) {
			// isolate_test.go's sealer, whose failures never come this soon.
			s := &flakySealer{sealEvery: 1 << 30, persistEvery: 1 << 30}
			return s, func() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.flushed) }
		}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := &feedSource{feed: make(chan feedBatch, batches), seen: make(chan int64, 1024)}
			sink, durable := c.sink()
			sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: sink,
				Batch: pipeline.BatchSettings{MaxRecords: 1 << 20, MaxAge: time.Hour, Overlap: c.overlap}})
			sp.Sources[0].MaxInFlightBatches = 4
			clock := newFakeClock()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- pipeline.Run(ctx, sp, quiet, pipeline.WithClock(clock.now, nil)) }()
			for range batches {
				src.feed <- feedBatch{n: per}
			}
			src.waitCommit(t, batches*per)
			if got := durable(); got != batches*per {
				t.Errorf("%d records durable, want %d", got, batches*per)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}
