package conformance_test

import (
	"testing"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
)

// The suite's own fault-injecting sink, with no faults configured, must pass
// the sink suite like any connector.
func TestFaultSinkConforms(t *testing.T) {
	conformance.TestSink(t, conformance.SinkHarness{
		New: func(t *testing.T) connector.Sink { return &conformance.FaultSink{Sink: &conformance.MemSink{}} },
		Count: func(t *testing.T, s connector.Sink) int {
			return len(s.(*conformance.FaultSink).Sink.(*conformance.MemSink).Values())
		},
		Written: func(t *testing.T, s connector.Sink) [][]byte {
			return s.(*conformance.FaultSink).Sink.(*conformance.MemSink).Values()
		},
	})
}
