package kafka_test

import (
	"context"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/internal/testkit/kafkatest"
	"github.com/weir-etl/weir/pipeline/pipelinetest"
	"github.com/weir-etl/weir/record"
	"github.com/weir-etl/weir/sink/kafka"
)

// The Kafka sink writes through: Write produces at once, and a produced record
// cannot be taken back (Abort only waits for outstanding produces, Discard
// does nothing; the runtime writes the group again: at-least-once). The suite
// then checks that flushed and persisted groups are in the topic, in order,
// and ignores aborted records there; TestWritesThrough checks that they are
// indeed there.
func TestConformance(t *testing.T) {
	// Every sink gets its own cluster with a one-partition topic, so counts
	// do not mix and the topic keeps the order records were produced in.
	brokers := map[connector.Sink][]string{}
	conformance.TestSink(t, conformance.SinkHarness{Runtime: pipelinetest.Runtime{},
		WritesThrough: true,
		New: func(t *testing.T) connector.Sink {
			s, addrs := newFakeSink(t)
			brokers[s] = addrs
			return s
		},
		Count: func(t *testing.T, s connector.Sink) int {
			return len(topicValues(testCtx(t), t, brokers[s]))
		},
		Written: func(t *testing.T, s connector.Sink) [][]byte {
			return topicValues(testCtx(t), t, brokers[s])
		},
	})
}

// TestWritesThrough runs the sequences of the suite's FlushedIsDurableAbortedIsNot
// and SealedGroupsPersistInOrder and checks exactly what the Kafka sink
// promises: every flushed or persisted group is in the topic, in order, and
// an aborted group's records, already produced, stay there too.
func TestWritesThrough(t *testing.T) {
	t.Run("Abort", func(t *testing.T) {
		ctx := testCtx(t)
		s, brokers := newFakeSink(t)
		check(t, s.Open(ctx))
		write(ctx, t, s, `{"n":1}`, `{"n":2}`)
		check(t, s.Flush(ctx))
		write(ctx, t, s, `{"n":3}`)
		check(t, s.Abort(ctx))
		write(ctx, t, s, `{"n":4}`)
		check(t, s.Flush(ctx))
		wantTopic(ctx, t, brokers, `{"n":1}`, `{"n":2}`, `{"n":3}`, `{"n":4}`)
	})
	t.Run("Seal", func(t *testing.T) {
		ctx := testCtx(t)
		s, brokers := newFakeSink(t)
		check(t, s.Open(ctx))
		write(ctx, t, s, `{"n":1}`, `{"n":2}`)
		g1, err := s.Seal(ctx)
		check(t, err)
		write(ctx, t, s, `{"n":3}`)
		g2, err := s.Seal(ctx)
		check(t, err)
		write(ctx, t, s, `{"n":4}`)
		check(t, g1.Persist(ctx))
		if n := len(topicValues(ctx, t, brokers)); n < 2 {
			t.Fatalf("after the first Persist, %d records in the topic, want at least 2", n)
		}
		check(t, g2.Persist(ctx))
		if n := len(topicValues(ctx, t, brokers)); n < 3 {
			t.Fatalf("after the second Persist, %d records in the topic, want at least 3", n)
		}
		check(t, s.Abort(ctx))
		write(ctx, t, s, `{"n":5}`)
		check(t, s.Flush(ctx))
		wantTopic(ctx, t, brokers, `{"n":1}`, `{"n":2}`, `{"n":3}`, `{"n":4}`, `{"n":5}`)
	})
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func write(ctx context.Context, t *testing.T, s connector.Sink, vals ...string) {
	t.Helper()
	recs := make([]record.Record, len(vals))
	for i, v := range vals {
		recs[i] = record.New([]byte(v))
	}
	if err := s.Write(ctx, recs); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

// wantTopic fails the test unless topic out holds exactly vals, in order.
func wantTopic(ctx context.Context, t *testing.T, brokers []string, vals ...string) {
	t.Helper()
	var got []string
	for _, v := range topicValues(ctx, t, brokers) {
		got = append(got, string(v))
	}
	if !slices.Equal(got, vals) {
		t.Fatalf("topic holds %q, want %q", got, vals)
	}
}

// newFakeSink returns an unopened sink producing to topic out of a new
// one-partition fake cluster, and the cluster's addresses. The sink is closed
// when the test ends.
func newFakeSink(t *testing.T) (*kafka.Sink, []string) {
	t.Helper()
	c := kafkatest.Fake(t, "out", 1)
	cfg := kafka.NewConfig()
	cfg.Brokers = c.ListenAddrs()
	cfg.Topic = "out"
	s, err := kafka.New("out", cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Close is safe twice; this covers a test that stops before its own.
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s, c.ListenAddrs()
}

// topicValues returns the values in partition 0 of topic out, in order: every
// record below its end offset, since nothing is ever deleted from it.
func topicValues(ctx context.Context, t *testing.T, brokers []string) [][]byte {
	t.Helper()
	ends, err := kadm.NewClient(kafkatest.Client(t, brokers)).ListEndOffsets(ctx, "out")
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("listing end offsets: %v", err)
	}
	end, ok := ends.Lookup("out", 0)
	if !ok {
		t.Fatal("no end offset for out/0")
	}
	var out [][]byte
	for _, r := range consume(ctx, t, brokers, "out", int(end.Offset)) {
		out = append(out, r.Value)
	}
	return out
}
