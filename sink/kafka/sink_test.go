package kafka_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/kafkatest"
	"github.com/weir-etl/weir/record"
	"github.com/weir-etl/weir/sink/kafka"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func openSink(ctx context.Context, t *testing.T, brokers []string, change func(*kafka.Config)) *kafka.Sink {
	t.Helper()
	cfg := kafka.NewConfig()
	cfg.Brokers = brokers
	cfg.Topic = "out"
	if change != nil {
		change(cfg)
	}
	s, err := kafka.New("out", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func rec(value string, key string, headers ...record.Header) record.Record {
	r := record.New([]byte(value))
	if key != "" {
		r.Key = []byte(key)
	}
	r.Headers = headers
	return r
}

// consume reads n records from topic, from the start.
func consume(ctx context.Context, t *testing.T, brokers []string, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := kafkatest.Client(t, brokers, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records from %s: %v", len(out), n, topic, err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// Flush returns only after the broker acknowledged the produce: while the
// broker holds the produce request, Flush is still waiting.
func TestFlushWaitsForAcknowledgement(t *testing.T) {
	ctx := testCtx(t)
	c := kafkatest.Fake(t, "out", 1)
	s := openSink(ctx, t, c.ListenAddrs(), nil)

	arrived, release := make(chan struct{}), make(chan struct{})
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		close(arrived)
		<-release
		return nil, nil, false // now let the broker handle it
	})
	if err := s.Write(ctx, []record.Record{rec("v1", "k1", record.Header{Key: "h", Value: []byte("x")}), rec("v2", "")}); err != nil {
		t.Fatal(err)
	}
	flushed := make(chan error, 1)
	go func() { flushed <- s.Flush(ctx) }()
	select {
	case <-arrived:
	case <-ctx.Done():
		t.Fatal("the produce request never reached the broker")
	}
	select {
	case err := <-flushed:
		t.Fatalf("Flush returned %v before the broker answered the produce", err)
	default:
	}
	close(release)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	got := consume(ctx, t, c.ListenAddrs(), "out", 2)
	if string(got[0].Value) != "v1" || string(got[0].Key) != "k1" || string(got[1].Value) != "v2" {
		t.Errorf("records = %q/%q, %q", got[0].Key, got[0].Value, got[1].Value)
	}
	if len(got[0].Headers) != 1 || got[0].Headers[0].Key != "h" || string(got[0].Headers[0].Value) != "x" {
		t.Errorf("headers = %+v, want h=x passed through", got[0].Headers)
	}
}

// A produce the broker refuses fails the group's Flush; after Abort the next
// group starts clean.
func TestFlushSurfacesProduceError(t *testing.T) {
	ctx := testCtx(t)
	c := kafkatest.Fake(t, "out", 1)
	s := openSink(ctx, t, c.ListenAddrs(), nil)

	c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req := kreq.(*kmsg.ProduceRequest)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	if err := s.Write(ctx, []record.Record{rec("lost", "")}); err != nil {
		t.Fatal(err)
	}
	err := s.Flush(ctx)
	if !errors.Is(err, kerr.TopicAuthorizationFailed) || !strings.HasPrefix(err.Error(), "kafka: ") {
		t.Fatalf("Flush = %v, want the broker's TOPIC_AUTHORIZATION_FAILED with a kafka: prefix", err)
	}
	if err := s.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, []record.Record{rec("kept", "")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("Flush after Abort = %v, want nil", err)
	}
	got := consume(ctx, t, c.ListenAddrs(), "out", 1)
	if string(got[0].Value) != "kept" {
		t.Errorf("first record in topic = %q, want kept", got[0].Value)
	}
}

// The topic template and key_field take values from the record's fields; a
// record missing them is rejected by index.
func TestTopicTemplateAndKeyField(t *testing.T) {
	ctx := testCtx(t)
	c := kafkatest.Fake(t, "ev-eu", 1)
	s := openSink(ctx, t, c.ListenAddrs(), func(cfg *kafka.Config) {
		cfg.Topic = "ev-{{ geo.region }}"
		cfg.KeyField = "id"
	})
	err := s.Write(ctx, []record.Record{
		rec(`{"id":7,"geo":{"region":"eu"}}`, ""),
		rec(`{"id":8}`, ""),
	})
	var rej *connector.RejectError
	if !errors.As(err, &rej) || rej.Index != 1 || !strings.Contains(err.Error(), "geo.region") {
		t.Fatalf("Write = %v, want record 1 rejected for missing geo.region", err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got := consume(ctx, t, c.ListenAddrs(), "ev-eu", 1)
	if string(got[0].Key) != "7" {
		t.Errorf("key = %q, want 7 from key_field id", got[0].Key)
	}
}

func TestSinkConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		field  string
		change func(*kafka.Config)
	}{
		{"topic", func(c *kafka.Config) { c.Topic = "" }},
		{"topic", func(c *kafka.Config) { c.Topic = "a-{{x" }},
		{"topic", func(c *kafka.Config) { c.Topic = "a-{{}}" }},
		{"compression", func(c *kafka.Config) { c.Compression = "brotli" }},
		{"brokers", func(c *kafka.Config) { c.Brokers = nil }},
		{"delivery_timeout", func(c *kafka.Config) { c.DeliveryTimeout = 0 }},
	} {
		c := kafka.NewConfig()
		c.Brokers = []string{"127.0.0.1:9092"}
		c.Topic = "t"
		tc.change(c)
		err := c.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), "kafka: ") || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("changing %s: Validate() = %v, want a kafka: error naming %s", tc.field, err, tc.field)
		}
	}
}
