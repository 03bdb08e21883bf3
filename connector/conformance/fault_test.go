package conformance_test

import (
	"testing"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline/pipelinetest"
	"github.com/weir-etl/weir/record"
)

// unencodable returns a record whose value is not JSON: a sink that writes
// JSON values (the suite's own sinks among them) can never write it.
func unencodable() record.Record {
	return record.New([]byte(`{"x": NaN}`))
}

// The suite's own fault-injecting sink, with no faults configured, must pass
// the sink suite like any connector.
func TestFaultSinkConforms(t *testing.T) {
	mem := func(s connector.Sink) *conformance.MemSink {
		return s.(*conformance.FaultSink).Sink.(*conformance.MemSink)
	}
	conformance.TestSink(t, conformance.SinkHarness{Runtime: pipelinetest.Runtime{},
		New: func(t *testing.T) connector.Sink {
			return &conformance.FaultSink{Sink: &conformance.MemSink{JSONOnly: true}}
		},
		Count:   func(t *testing.T, s connector.Sink) int { return len(mem(s).Values()) },
		Written: func(t *testing.T, s connector.Sink) [][]byte { return mem(s).Values() },
		Reopen: func(t *testing.T, s connector.Sink) connector.Sink {
			return &conformance.FaultSink{Sink: mem(s).Reopen()}
		},
		Unwritable: unencodable,
	})
}

// The sealing in-memory sink passes the suite, its sealing checks included.
func TestMemSealerConforms(t *testing.T) {
	mem := func(s connector.Sink) *conformance.MemSealer { return s.(*conformance.MemSealer) }
	conformance.TestSink(t, conformance.SinkHarness{Runtime: pipelinetest.Runtime{},
		New: func(t *testing.T) connector.Sink {
			return &conformance.MemSealer{MemSink: conformance.MemSink{JSONOnly: true}}
		},
		Count:      func(t *testing.T, s connector.Sink) int { return len(mem(s).Values()) },
		Written:    func(t *testing.T, s connector.Sink) [][]byte { return mem(s).Values() },
		Reopen:     func(t *testing.T, s connector.Sink) connector.Sink { return mem(s).Reopen() },
		Unwritable: unencodable,
	})
}
