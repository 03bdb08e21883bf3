package blackhole_test

import (
	"testing"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline/pipelinetest"
	"github.com/weir-etl/weir/sink/blackhole"
)

func TestConformance(t *testing.T) {
	conformance.TestSink(t, conformance.SinkHarness{Runtime: pipelinetest.Runtime{},
		New:   func(t *testing.T) connector.Sink { return blackhole.New() },
		Count: func(t *testing.T, s connector.Sink) int { return int(s.(*blackhole.Sink).Flushed()) },
	})
}
