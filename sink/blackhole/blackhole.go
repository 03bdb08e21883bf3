// Package blackhole is a sink that discards records and counts them: for load
// tests and benchmarks of everything before the sink.
package blackhole

import (
	"context"
	"sync/atomic"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// Config configures a blackhole sink; it has no options.
type Config struct{}

func init() {
	connector.RegisterSink(connector.SinkDef[Config]{
		Name:  "blackhole",
		Doc:   "discards records, counting them",
		Build: func(string, *Config) (connector.Sink, error) { return New(), nil },
	})
}

// Sink counts records: Write adds to the pending group, Flush moves it to the
// flushed total, Abort forgets it.
type Sink struct {
	pending int64
	flushed atomic.Int64
}

// New returns a blackhole sink.
func New() *Sink { return &Sink{} }

// Open does nothing.
func (s *Sink) Open(ctx context.Context) error { return nil }

// Write counts recs into the current group.
func (s *Sink) Write(ctx context.Context, recs []record.Record) error {
	s.pending += int64(len(recs))
	return nil
}

// Flush adds the group to the flushed count.
func (s *Sink) Flush(ctx context.Context) error {
	s.flushed.Add(s.pending)
	s.pending = 0
	return nil
}

// Abort forgets the group.
func (s *Sink) Abort(ctx context.Context) error {
	s.pending = 0
	return nil
}

// Close does nothing.
func (s *Sink) Close(ctx context.Context) error { return nil }

// Flushed returns how many records were flushed. It is safe to call at any time.
func (s *Sink) Flushed() int64 { return s.flushed.Load() }
