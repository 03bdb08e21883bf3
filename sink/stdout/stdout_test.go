package stdout_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/weir-etl/weir/record"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline/pipelinetest"
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
	conformance.TestSink(t, conformance.SinkHarness{Runtime: pipelinetest.Runtime{},
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

// Guarantee: the sink writes only what its format promises: a value with a
// line break is rejected in either format (it would read back as two
// records), and with ndjson a value that is not one JSON value is too.
func TestRejectsWhatTheFormatCannotHold(t *testing.T) {
	for _, c := range []struct {
		format, value string
		ok            bool
	}{
		{"lines", "not json", true},
		{"lines", "a\nb", false},
		{"lines", "a\r", false},
		{"ndjson", `{"id":12345678901234567891}`, true},
		{"ndjson", "not json", false},
		{"ndjson", `{"a":1`, false},
		{"ndjson", "{\"a\":\n1}", false},
	} {
		var b bytes.Buffer
		s, err := stdout.NewFormat(&b, c.format)
		if err != nil {
			t.Fatal(err)
		}
		err = s.Write(context.Background(), []record.Record{record.New([]byte(c.value))})
		var rej *connector.RejectError
		if c.ok != (err == nil) || !c.ok && !errors.As(err, &rej) {
			t.Errorf("%s %q: %v", c.format, c.value, err)
			continue
		}
		s.Flush(context.Background())
		if c.ok && b.String() != c.value+"\n" {
			t.Errorf("%s %q: wrote %q", c.format, c.value, b.String())
		}
	}
	if _, err := stdout.NewFormat(io.Discard, "csv"); err == nil {
		t.Error("format csv accepted")
	}
}
