package stdout_test

import (
	"bytes"
	"sync"
	"testing"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/sink/stdout"
)

// lockedBuffer is the sink's output, read by the test while the runtime writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines() [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.SplitAfter(bytes.TrimSuffix(bytes.Clone(l.b.Bytes()), []byte("\n")), []byte("\n"))
}

func TestConformance(t *testing.T) {
	outs := map[connector.Sink]*lockedBuffer{}
	var mu sync.Mutex
	out := func(s connector.Sink) *lockedBuffer { mu.Lock(); defer mu.Unlock(); return outs[s] }
	conformance.TestSink(t, conformance.SinkHarness{
		New: func(t *testing.T) connector.Sink {
			b := &lockedBuffer{}
			s := stdout.New(b)
			mu.Lock()
			outs[s] = b
			mu.Unlock()
			return s
		},
		Count:   func(t *testing.T, s connector.Sink) int { return len(out(s).lines()) },
		Written: func(t *testing.T, s connector.Sink) [][]byte { return out(s).lines() },
	})
}
