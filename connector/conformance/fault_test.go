package conformance_test

import (
	"math"
	"testing"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/record"
)

// unencodable returns a record whose fields JSON cannot encode: a sink that
// writes values can never write it.
func unencodable() record.Record {
	r := record.New(nil)
	r.SetFields(map[string]any{"x": math.NaN()})
	return r
}

// The suite's own fault-injecting sink, with no faults configured, must pass
// the sink suite like any connector.
func TestFaultSinkConforms(t *testing.T) {
	mem := func(s connector.Sink) *conformance.MemSink {
		return s.(*conformance.FaultSink).Sink.(*conformance.MemSink)
	}
	conformance.TestSink(t, conformance.SinkHarness{
		New:     func(t *testing.T) connector.Sink { return &conformance.FaultSink{Sink: &conformance.MemSink{}} },
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
	conformance.TestSink(t, conformance.SinkHarness{
		New:        func(t *testing.T) connector.Sink { return &conformance.MemSealer{} },
		Count:      func(t *testing.T, s connector.Sink) int { return len(mem(s).Values()) },
		Written:    func(t *testing.T, s connector.Sink) [][]byte { return mem(s).Values() },
		Reopen:     func(t *testing.T, s connector.Sink) connector.Sink { return mem(s).Reopen() },
		Unwritable: unencodable,
	})
}
