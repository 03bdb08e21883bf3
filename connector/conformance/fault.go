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

// FaultSealer is FaultSink for a sink that seals (connector.Sealer): the
// runtime sees a Sealer and flushes through Seal and Persist. OnPersist, when
// set, is called before each Persist, on the runtime's persister goroutine; a
// non-nil error is returned instead of persisting, and the runtime then calls
// the group's Discard. It also records how many sealed groups were out at
// once (sealed, Persist not yet returned).
type FaultSealer struct {
	FaultSink
	OnPersist func() error

	seals, persists, discards, out, maxOut int
}

// NewFaultSealer wraps s.
func NewFaultSealer(s connector.Sealer) *FaultSealer {
	return &FaultSealer{FaultSink: FaultSink{Sink: s}}
}

// Seal implements connector.Sealer.
func (f *FaultSealer) Seal(ctx context.Context) (connector.SealedGroup, error) {
	g, err := f.Sink.(connector.Sealer).Seal(ctx)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.seals++
	f.out++
	f.maxOut = max(f.maxOut, f.out)
	f.mu.Unlock()
	return &faultGroup{f: f, g: g}, nil
}

// SealCounts returns how many groups were sealed, persisted (successfully)
// and discarded, and the most that were out at once.
func (f *FaultSealer) SealCounts() (seals, persists, discards, maxOut int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seals, f.persists, f.discards, f.maxOut
}

type faultGroup struct {
	f *FaultSealer
	g connector.SealedGroup
}

func (g *faultGroup) Persist(ctx context.Context) error {
	err := func() error {
		if g.f.OnPersist != nil {
			if err := g.f.OnPersist(); err != nil {
				return err
			}
		}
		return g.g.Persist(ctx)
	}()
	g.f.mu.Lock()
	g.f.out--
	if err == nil {
		g.f.persists++
	}
	g.f.mu.Unlock()
	return err
}

func (g *faultGroup) Discard(ctx context.Context) error {
	g.f.mu.Lock()
	g.f.discards++
	g.f.mu.Unlock()
	return g.g.Discard(ctx)
}
