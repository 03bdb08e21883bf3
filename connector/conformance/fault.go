package conformance

import (
	"context"
	"sync"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// FaultSink wraps a sink and injects failures: before each Write and Flush it
// asks its hooks, which may return an error instead of calling the wrapped sink.
// It is safe for the runtime's one sink goroutine plus a test reading its
// counters.
type FaultSink struct {
	connector.Sink

	// OnWrite, when set, is called before each Write; a non-nil error is
	// returned instead of writing (a *connector.RejectError rejects a record,
	// and the records before it are written first).
	OnWrite func(recs []record.Record) error
	// OnFlush, when set, is called before each Flush; a non-nil error is
	// returned instead of flushing.
	OnFlush func() error

	mu      sync.Mutex
	writes  int
	flushes int
	aborts  int
}

// Write implements connector.Sink.
func (f *FaultSink) Write(ctx context.Context, recs []record.Record) error {
	f.mu.Lock()
	f.writes++
	f.mu.Unlock()
	if f.OnWrite != nil {
		if err := f.OnWrite(recs); err != nil {
			if rej, ok := err.(*connector.RejectError); ok && rej.Index > 0 {
				if werr := f.Sink.Write(ctx, recs[:rej.Index]); werr != nil {
					return werr
				}
			}
			return err
		}
	}
	return f.Sink.Write(ctx, recs)
}

// Flush implements connector.Sink.
func (f *FaultSink) Flush(ctx context.Context) error {
	f.mu.Lock()
	f.flushes++
	f.mu.Unlock()
	if f.OnFlush != nil {
		if err := f.OnFlush(); err != nil {
			return err
		}
	}
	return f.Sink.Flush(ctx)
}

// Abort implements connector.Sink.
func (f *FaultSink) Abort(ctx context.Context) error {
	f.mu.Lock()
	f.aborts++
	f.mu.Unlock()
	return f.Sink.Abort(ctx)
}

// Counts returns how many times Write, Flush and Abort were called.
func (f *FaultSink) Counts() (writes, flushes, aborts int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes, f.flushes, f.aborts
}
