package kafka_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/internal/testkit/kafkatest"
	"github.com/weir-etl/weir/pipeline/pipelinetest"
	"github.com/weir-etl/weir/source/kafka"
)

func TestConformance(t *testing.T) {
	ctx := testCtx(t)
	c := kafkatest.Fake(t, "conf", 1)
	cl := kafkatest.Client(t, c.ListenAddrs())
	// Far more records than the suite reads: the runtime subtest reads ahead
	// of what it commits, and every later subtest resumes from that commit and
	// still needs five batches. Values are unique, so a replay that starts at
	// the wrong record shows.
	const n = 20000
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "conf", Value: fmt.Appendf(nil, `{"n":%d}`, i)}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing: %v", err)
	}
	conformance.TestSource(t, conformance.SourceHarness{Runtime: pipelinetest.Runtime{},
		New: func(t *testing.T) connector.Source {
			cfg := kafka.NewConfig()
			cfg.Brokers = c.ListenAddrs()
			// One group for every instance: each resumes where the last
			// committed.
			cfg.Group = "conf"
			cfg.Topics = []string{"conf"}
			// Small batches, so that five of them are a small part of the topic.
			cfg.MaxPollRecords = 5
			// Short timeouts keep a hand-over between instances quick should a
			// member fail to leave the group.
			cfg.SessionTimeout = 6 * time.Second
			cfg.RebalanceTimeout = 10 * time.Second
			s, err := kafka.New("in", cfg)
			if err != nil {
				t.Fatal(err)
			}
			// The suite closes what it opens; this covers a subtest that stops
			// early. Close is idempotent.
			t.Cleanup(func() { _ = s.Close(context.Background()) })
			return s
		},
	})
}
