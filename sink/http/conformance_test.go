package http_test

import (
	"testing"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline/pipelinetest"
	"github.com/weir-etl/weir/record"
	httpsink "github.com/weir-etl/weir/sink/http"
)

func TestConformance(t *testing.T) {
	receivers := map[connector.Sink]*receiver{}
	build := func(t *testing.T, rc *receiver) connector.Sink {
		c := httpsink.NewConfig()
		c.URL = rc.srv.URL + "/ingest"
		c.ConnectTimeout = 0
		s, err := httpsink.New("out", c)
		if err != nil {
			t.Fatal(err)
		}
		receivers[s] = rc
		return s
	}
	conformance.TestSink(t, conformance.SinkHarness{Runtime: pipelinetest.Runtime{},
		New:           func(t *testing.T) connector.Sink { return build(t, newReceiver(t)) },
		Count:         func(t *testing.T, s connector.Sink) int { return len(receivers[s].written()) },
		Written:       func(t *testing.T, s connector.Sink) [][]byte { return receivers[s].written() },
		WritesThrough: true,
		Reopen:        func(t *testing.T, s connector.Sink) connector.Sink { return build(t, receivers[s]) },
		// NDJSON carries a value on one line: one that spans lines cannot
		// be sent as it is.
		Unwritable: func() record.Record { return record.New([]byte("{\"a\":\n1}")) },
	})
}
