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
// as the sink under a FaultSink and as a dead letter sink.
type MemSink struct {
	mu      sync.Mutex
	group   [][]byte
	flushed [][]byte
}

// Open implements connector.Sink.
func (m *MemSink) Open(ctx context.Context) error { return nil }

// Write implements connector.Sink.
func (m *MemSink) Write(ctx context.Context, recs []record.Record) error {
	for i := range recs {
		v, err := recs[i].Value()
		if err != nil {
			return err
		}
		m.group = append(m.group, bytes.Clone(v))
	}
	return nil
}

// Flush implements connector.Sink.
func (m *MemSink) Flush(ctx context.Context) error {
	m.mu.Lock()
	m.flushed = append(m.flushed, m.group...)
	m.mu.Unlock()
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
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([][]byte(nil), m.flushed...)
}

// MemSealer is MemSink as a connector.Sealer: Seal hands the group over, and
// its Persist makes it readable through Values.
type MemSealer struct{ MemSink }

// Seal implements connector.Sealer.
func (m *MemSealer) Seal(ctx context.Context) (connector.SealedGroup, error) {
	g := &memGroup{m: &m.MemSink, vals: m.group}
	m.group = nil
	return g, nil
}

type memGroup struct {
	m    *MemSink
	vals [][]byte
}

func (g *memGroup) Persist(ctx context.Context) error {
	g.m.mu.Lock()
	g.m.flushed = append(g.m.flushed, g.vals...)
	g.m.mu.Unlock()
	return nil
}

func (g *memGroup) Discard(ctx context.Context) error { return nil }
