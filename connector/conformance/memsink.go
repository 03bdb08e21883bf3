package conformance

import (
	"bytes"
	"context"
	"sync"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// MemSink is an in-memory sink with all-or-nothing groups: what Flush made
// durable is readable through Values, an aborted group never is. Tests use it
// as the sink under a FaultSink and as a dead letter sink. With JSONOnly set
// it rejects (RejectError) a value that is not JSON. Its destination is
// a store of flushed values that Reopen shares with a new instance, as a
// database outlives a crashed process.
type MemSink struct {
	// JSONOnly makes the sink reject values that are not JSON, as a sink of
	// JSON documents does: the suite's check of rejected records needs one.
	JSONOnly bool

	group [][]byte

	once sync.Once
	dest *memDest // see destination
}

// memDest is what a MemSink has made durable.
type memDest struct {
	mu      sync.Mutex
	flushed [][]byte
}

// destination returns m's store, creating it on first use so that the zero
// MemSink works. The sink's goroutine and a test reading Values may both
// ask, hence the Once.
func (m *MemSink) destination() *memDest {
	m.once.Do(func() {
		if m.dest == nil {
			m.dest = &memDest{}
		}
	})
	return m.dest
}

// Open implements connector.Sink.
func (m *MemSink) Open(ctx context.Context) error { return nil }

// Write implements connector.Sink. A record whose value cannot be encoded
// (fields a transform set to something JSON cannot hold) is rejected.
func (m *MemSink) Write(ctx context.Context, recs []record.Record) error {
	for i := range recs {
		v, _ := recs[i].Value()
		if err := recs[i].CheckJSON(); m.JSONOnly && err != nil {
			return &connector.RejectError{Index: i, Err: err}
		}
		m.group = append(m.group, bytes.Clone(v))
	}
	return nil
}

// Flush implements connector.Sink.
func (m *MemSink) Flush(ctx context.Context) error {
	d := m.destination()
	d.mu.Lock()
	d.flushed = append(d.flushed, m.group...)
	d.mu.Unlock()
	m.group = m.group[:0]
	return nil
}

// Abort implements connector.Sink.
func (m *MemSink) Abort(ctx context.Context) error {
	m.group = m.group[:0]
	return nil
}

// Close implements connector.Sink.
func (m *MemSink) Close(ctx context.Context) error { return nil }

// Values returns a copy of every flushed value, in order.
func (m *MemSink) Values() [][]byte {
	d := m.destination()
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([][]byte(nil), d.flushed...)
}

// Reopen returns a new MemSink over m's flushed values, as a restarted
// process would find them: m's current group is not among them.
func (m *MemSink) Reopen() *MemSink { return &MemSink{JSONOnly: m.JSONOnly, dest: m.destination()} }

// MemSealer is MemSink as a connector.Sealer: Seal hands the group over, and
// its Persist makes it readable through Values.
type MemSealer struct{ MemSink }

// Seal implements connector.Sealer.
func (m *MemSealer) Seal(ctx context.Context) (connector.SealedGroup, error) {
	g := &memGroup{d: m.destination(), vals: m.group}
	m.group = nil
	return g, nil
}

// Reopen returns a new MemSealer over m's flushed values; see MemSink.Reopen.
func (m *MemSealer) Reopen() *MemSealer {
	return &MemSealer{MemSink{JSONOnly: m.JSONOnly, dest: m.destination()}}
}

type memGroup struct {
	d    *memDest
	vals [][]byte
}

func (g *memGroup) Persist(ctx context.Context) error {
	g.d.mu.Lock()
	g.d.flushed = append(g.d.flushed, g.vals...)
	g.d.mu.Unlock()
	return nil
}

func (g *memGroup) Discard(ctx context.Context) error { return nil }
