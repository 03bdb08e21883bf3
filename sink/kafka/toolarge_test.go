package kafka_test

import (
	"crypto/rand"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/testkit/kafkatest"
	"github.com/weir-etl/weir/record"
	"github.com/weir-etl/weir/sink/kafka"
)

// A record larger than max_message_bytes on its own is rejected by index at
// Write, naming the option and the fix; the records before it are produced,
// and the group then flushes: no attempt of the group can ever hold it.
func TestRecordLargerThanABatchIsRejected(t *testing.T) {
	ctx := testCtx(t)
	c := kafkatest.Fake(t, "out", 1)
	s := openSink(ctx, t, c.ListenAddrs(), func(cfg *kafka.Config) { cfg.MaxMessageBytes = 2048 })
	big := rec(`{"blob":"`+strings.Repeat("x", 3000)+`"}`, "")
	err := s.Write(ctx, []record.Record{rec(`{"n":1}`, ""), big, rec(`{"n":3}`, "")})
	var rej *connector.RejectError
	if !errors.As(err, &rej) || rej.Index != 1 {
		t.Fatalf("Write = %v, want the record at index 1 rejected", err)
	}
	for _, w := range []string{"kafka: sink out:", "3011 bytes", "max_message_bytes (2048)", "max.message.bytes"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("rejection %q does not say %q", err, w)
		}
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("Flush after the rejection = %v, want the record before it delivered", err)
	}
	if got := consume(ctx, t, c.ListenAddrs(), "out", 1); string(got[0].Value) != `{"n":1}` {
		t.Errorf("topic holds %q, want the record before the rejected one", got[0].Value)
	}
}

// A record the broker refuses as too large (under max_message_bytes, above
// the topic's max.message.bytes) fails its group with connector.ErrTooLarge,
// so that the runtime writes the group again in parts down to that record,
// rather than the whole group again and again.
func TestBrokerTooLargeIsErrTooLarge(t *testing.T) {
	ctx := testCtx(t)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "out"), kfake.BrokerConfigs(map[string]string{"message.max.bytes": "4096"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s := openSink(ctx, t, c.ListenAddrs(), func(cfg *kafka.Config) { cfg.Compression = "none" })
	noise := make([]byte, 6000)
	rand.Read(noise)
	if err := s.Write(ctx, []record.Record{rec(string(noise), "")}); err != nil {
		t.Fatal(err)
	}
	err = s.Flush(ctx)
	if !errors.Is(err, connector.ErrTooLarge) || !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("Flush = %v, want connector.ErrTooLarge wrapping the broker's MESSAGE_TOO_LARGE", err)
	}
}
